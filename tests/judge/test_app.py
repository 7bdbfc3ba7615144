"""The HTTP judge, served for real on loopback, with real policy worker processes."""

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from evopolicygym.judge import MAX_BODY_BYTES
from evopolicygym.protocol import Evaluation
from support import constant_policy, write_policy


def test_info_and_task_describe_the_run_without_hidden_cases(live_judge):
    info = live_judge.request("GET", "/info").body
    assert info["state"] == {
        "remaining_budget": 6,
        "n_submits": 0,
        "is_finalized": False,
        "phase": "open",
    }
    assert info["env_meta"]["n_env_instances"] == 8
    assert info["env_meta"]["action_space"] == {"type": "Discrete", "n": 3}
    assert info["resource_limits"]["act_timeout_s"] == 10.0
    task = live_judge.request("GET", "/task").body
    assert "## Policy Contract" in task and "## Submit Notes" in task and "0..7" in task
    hidden = [
        str(seed)
        for seed in live_judge.judge.settings.splits.valid
        + live_judge.judge.settings.splits.heldout
    ]
    assert not any(seed in json.dumps(info) or seed in task for seed in hidden)


@pytest.mark.parametrize(
    ("kwargs", "status", "code"),
    [
        ({"raw": b"{not json"}, 400, "bad_request"),
        ({"raw": b"[1, 2]"}, 400, "bad_request"),
        ({"body": {"cases": [1]}}, 400, "bad_request"),
        ({"body": {"env_instances": [1], "extra": 1}}, 400, "bad_request"),
        ({"body": {"env_instances": "1-"}}, 400, "budget_invalid"),
        ({"body": {"env_instances": 3}}, 400, "budget_invalid"),
        (
            {"body": {"env_instances": [0]}, "content_type": "text/plain"},
            415,
            "unsupported_media_type",
        ),
        (
            {"raw": b'{"env_instances": "' + b"1," * MAX_BODY_BYTES + b'1"}'},
            413,
            "payload_too_large",
        ),
    ],
)
def test_malformed_requests_get_a_reason_and_cost_nothing(live_judge, kwargs, status, code):
    response = live_judge.request("POST", "/submit", **kwargs)
    assert response.status == status
    assert response.body["status"] == code and response.body["error"]["message"]
    assert live_judge.judge.ledger.remaining == 6 and live_judge.judge.ledger.next_index == 0


def test_unknown_paths_and_finalize_are_refused(live_judge):
    assert live_judge.request("GET", "/nope").status == 404
    assert live_judge.request("POST", "/finalize", {}).body["status"] == "method_not_allowed"
    assert live_judge.request("GET", "/health").body == {"status": "ok", "phase": "open"}


def test_rejects_write_a_summary_but_cost_nothing(live_judge):
    out_of_range = live_judge.submit([0, 8])
    too_many = live_judge.submit("0-6")
    assert (out_of_range.status, out_of_range.body["status"]) == (400, "invalid_env_instance")
    assert (too_many.status, too_many.body["status"]) == (400, "budget_invalid")
    assert too_many.body["summary"]["n_episodes"] == 0
    feedback = live_judge.paths.feedback
    assert (
        json.loads((feedback / "submit_001" / "summary.json").read_text())["status"]
        == "budget_invalid"
    )
    assert "1..6" in (feedback / "submit_001" / "errors.txt").read_text()
    assert live_judge.judge.ledger.remaining == 6
    assert not (live_judge.paths.checkpoints / "submit_000").exists()


def test_an_ok_submit_writes_complete_feedback(live_judge):
    write_policy(
        live_judge.paths.system,
        """
        class Policy:
            def __init__(self, obs_space, action_space, env_meta):
                print("init for", env_meta["env"], env_meta["n_episodes_this_submit"])
            def reset(self, episode_index):
                self.i = episode_index
            def act(self, obs):
                print("seen", obs)
                return 2
    """,
    )
    response = live_judge.submit("0-2")
    assert response.status == 200
    summary = response.body["summary"]
    seeds = live_judge.judge.settings.splits.train
    assert summary["returns"] == [seeds[i] % 8 + 2.0 for i in range(3)]
    assert summary["first_global_episode"] == 0 and summary["remaining_budget"] == 3
    folder = live_judge.paths.feedback / "submit_000"
    assert json.loads((folder / "summary.json").read_text()) == summary
    rows = [
        json.loads(line)
        for line in (folder / "episodes" / "ep_000" / "trajectory.jsonl").read_text().splitlines()
    ]
    assert rows == [
        {
            "t": 0,
            "obs": seeds[0] % 8,
            "action": 2,
            "reward": seeds[0] % 8 + 2.0,
            "terminated": True,
            "truncated": False,
            "info": {},
        }
    ]
    assert (
        (folder / "episodes" / "ep_000" / "stdout.txt")
        .read_text()
        .startswith("init for toy 3\nseen")
    )
    assert (live_judge.paths.checkpoints / "submit_000" / "metrics.json").exists()
    second = live_judge.submit([5])
    assert second.body["summary"]["first_global_episode"] == 3
    assert (live_judge.paths.feedback / "submit_001" / "episodes" / "ep_003").is_dir()


@pytest.mark.judge(budget=20, maximum=3)
def test_concurrent_submits_never_overdraw(live_judge):
    write_policy(live_judge.paths.system, constant_policy(1))
    with ThreadPoolExecutor(max_workers=16) as pool:
        responses = list(
            pool.map(lambda i: live_judge.submit([i % 8, (i + 1) % 8, (i + 2) % 8]), range(16))
        )
    charged = [r for r in responses if r.status == 200]
    assert (
        len(charged) == 6
    )  # 6 x 3 = 18 episodes; the rest cannot fit in the 2 left or the run closed
    assert all(r.status in (400, 409) for r in responses if r.status != 200)
    assert live_judge.judge.ledger.used == 18
    assert sorted(r.body["summary"]["first_global_episode"] for r in charged) == [
        0,
        3,
        6,
        9,
        12,
        15,
    ]
    indexes = sorted(r.body["submit_id"] for r in responses if "submit_id" in r.body)
    assert indexes == list(range(len(indexes)))


def test_spending_the_budget_closes_submits(live_judge):
    write_policy(live_judge.paths.system, constant_policy(2))
    assert live_judge.submit("0-5").status == 200
    closed = live_judge.submit([0])
    assert (closed.status, closed.body["status"]) == (409, "run_closed")
    state = live_judge.request("GET", "/info").body["state"]
    assert state["phase"] == "finalizing" and state["is_finalized"]


def test_selection_prefers_the_best_validation_mean_and_ties_go_to_the_latest(live_judge):
    write_policy(live_judge.paths.system, constant_policy(0))
    live_judge.submit([0])
    write_policy(live_judge.paths.system, constant_policy(2))
    live_judge.submit([0])
    live_judge.submit([1])
    write_policy(live_judge.paths.system, constant_policy(1))
    live_judge.submit("2-4")
    selection = live_judge.judge.finalize()
    valid = live_judge.judge.settings.splits.valid
    mean = lambda action: sum(s % 8 + action for s in valid) / len(valid)  # noqa: E731
    assert selection.val_scores == {0: mean(0), 1: mean(2), 2: mean(2), 3: mean(1)}
    assert selection.best == 2
    heldout = live_judge.judge.settings.splits.heldout
    assert selection.heldout.mean == sum(s % 8 + 2 for s in heldout) / len(heldout)
    assert "return 2" in (live_judge.paths.system / "policy.py").read_text().replace(
        "self.action", "return 2"
    )
    assert (live_judge.paths.system / "policy.py").read_text() == (
        live_judge.paths.checkpoints / "submit_002" / "policy.py"
    ).read_text()


def test_finalize_resumes_from_journaled_validation_scores(live_judge):
    write_policy(live_judge.paths.system, constant_policy(0))
    live_judge.submit([0])
    live_judge.submit([1])
    # As if a crash hit after submit 0 was validated: its journaled score is reused, not redone.
    live_judge.judge.ledger.append(
        Evaluation(type="validation", index=0, mean=99.0, std=0.0, returns=[], errors=0)
    )
    selection = live_judge.judge.finalize()
    assert selection.val_scores[0] == 99.0 and selection.best == 0
    valid = live_judge.judge.settings.splits.valid
    assert selection.val_scores[1] == sum(s % 8 for s in valid) / len(valid)
    assert sorted(live_judge.judge.ledger.validation) == [0, 1]


def raw_http(url: str, method: str, path: str, body: bytes = b"", headers: dict | None = None):
    """One request over a plain socket, so that the Host header is ours to choose."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for name, value in {"Host": parts.netloc, **(headers or {})}.items():
            connection.putheader(name, value)
        connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body)
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read() or b"null")
    finally:
        connection.close()


def unchanged(live_judge) -> bool:
    ledger = live_judge.judge.ledger
    return ledger.remaining == 6 and ledger.next_index == 0 and not ledger.submits


def test_every_url_needs_the_run_secret(live_judge):
    write_policy(live_judge.paths.system, constant_policy(1))
    secret = live_judge.url.rsplit("/", 1)[1]
    assert len(secret) >= 24
    submit = json.dumps({"env_instances": [0]}).encode()
    json_type = {"Content-Type": "application/json"}
    for method, path, body in [
        ("GET", "/info", b""),
        ("GET", "/task", b""),
        ("GET", "/health", b""),
        ("POST", "/submit", submit),
        ("POST", f"/{secret[:-1]}/submit", submit),
        ("POST", f"/{secret}x/submit", submit),
        ("POST", f"/x/{secret}/submit", submit),
    ]:
        status, answer = raw_http(live_judge.url, method, path, body, json_type)
        assert status == 401, path
        assert (
            answer["status"] == "unauthorized" and "EVOPOLICYGYM_API" in answer["error"]["message"]
        )
    assert unchanged(live_judge)
    assert not (live_judge.paths.feedback / "submit_000").exists()
    # The same request with the secret is judged.
    assert raw_http(live_judge.url, "POST", f"/{secret}/submit", submit, json_type)[0] == 200


@pytest.mark.parametrize(
    "host", ["evil.example.com", "evil.example.com:{port}", "127.0.0.1:1", "", "10.0.0.1:{port}"]
)
def test_a_foreign_host_is_refused_even_with_the_secret(live_judge, host):
    write_policy(live_judge.paths.system, constant_policy(1))
    port = live_judge.url.split(":")[2].split("/")[0]
    path = "/" + live_judge.url.split("/", 3)[3] + "/submit"
    status, answer = raw_http(
        live_judge.url,
        "POST",
        path,
        json.dumps({"env_instances": [0]}).encode(),
        {"Host": host.format(port=port), "Content-Type": "application/json"},
    )
    assert (status, answer["status"]) == (403, "forbidden_host")
    assert unchanged(live_judge)


def test_localhost_names_the_judge_too(live_judge):
    port = live_judge.url.split(":")[2].split("/")[0]
    path = "/" + live_judge.url.split("/", 3)[3] + "/health"
    for host in (f"localhost:{port}", f"LOCALHOST:{port}", f"127.0.0.1:{port}"):
        assert raw_http(live_judge.url, "GET", path, headers={"Host": host})[0] == 200


def test_task_lists_the_urls_with_the_secret(live_judge):
    task = live_judge.request("GET", "/task").body
    assert f"POST {live_judge.url}/submit" in task and f"GET {live_judge.url}/info" in task


@pytest.mark.parametrize(
    ("raw", "status", "code", "reason"),
    [
        (
            b'{"env_instances": ' + b"[" * 30_000 + b"]" * 30_000 + b"}",
            400,
            "bad_request",
            "deeper",
        ),
        (b"[" * 40 + b"]" * 40, 400, "bad_request", "deeper"),
        (b'{"env_instances": "\\u0663"}', 400, "budget_invalid", "ASCII"),
        ('{"env_instances": "\u0663"}'.encode(), 400, "budget_invalid", "ASCII"),
        (b'{"env_instances": "1_000"}', 400, "budget_invalid", "ASCII"),
        (b'{"env_instances": "\\u00a01"}', 400, "budget_invalid", "ASCII"),
        (b'{"env_instances": "99999999999"}', 400, "budget_invalid", "10 digits"),
        (b'{"env_instances": "0-' + b"9" * 5000 + b'"}', 400, "budget_invalid", "10 digits"),
        (b'{"env_instances": [' + b"9" * 5000 + b"]}", 400, "bad_request", "not valid JSON"),
        (b'{"env_instances": [99999999999]}', 400, "budget_invalid", "10 digits"),
        (b'{"env_instances": [true]}', 400, "budget_invalid", "True"),
        (b'{"env_instances": [1.0]}', 400, "budget_invalid", "1.0"),
        (b'{"env_instances": ["1"]}', 400, "budget_invalid", "'1'"),
        (b'{"env_instances": [-1]}', 400, "budget_invalid", "negative"),
        (b'{"env_instances": null}', 400, "budget_invalid", "NoneType"),
        (b'{"env_instances": "3-1"}', 400, "budget_invalid", "below start"),
        (b'{"env_instances": ""}', 400, "budget_invalid", "empty"),
        (b'{"env_instances": [0], "env_instances2": 1}', 400, "bad_request", "unknown field"),
        (b"\xff\xfe", 400, "bad_request", "not valid JSON"),
        (b"", 400, "bad_request", "not valid JSON"),
    ],
)
def test_hostile_bodies_get_a_reason_and_cost_nothing(live_judge, raw, status, code, reason):
    response = live_judge.request("POST", "/submit", raw=raw)
    assert (response.status, response.body["status"]) == (status, code)
    assert reason in response.body["error"]["message"]
    assert unchanged(live_judge)


def test_a_huge_range_is_a_cheap_reject_that_stores_its_reason_not_its_ids(live_judge):
    response = live_judge.submit("0-999999")
    assert (response.status, response.body["status"]) == (400, "budget_invalid")
    assert "1000000 episodes requested" in response.body["summary"]["message"]
    assert response.body["summary"]["env_instances"] == []
    on_disk = sum(
        path.stat().st_size
        for root in (live_judge.paths.feedback, live_judge.paths.private)
        for path in root.rglob("*")
        if path.is_file()
    )
    assert on_disk < 4096
    assert live_judge.judge.ledger.remaining == 6


def test_a_client_that_hangs_up_while_queued_is_not_charged(live_judge):
    import socket
    import time
    from urllib.parse import urlsplit

    write_policy(live_judge.paths.system, constant_policy(1))
    parts = urlsplit(live_judge.url)
    body = json.dumps({"env_instances": [0, 1]}).encode()
    head = (
        f"POST {parts.path}/submit HTTP/1.1\r\nHost: {parts.netloc}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    log = live_judge.paths.logs / "harness.log"
    with live_judge.judge._lock:  # as if another submit were running
        client = socket.create_connection((parts.hostname, parts.port))
        client.sendall(head + body)
        time.sleep(0.5)  # the request is read and queued behind the lock
        client.close()
    deadline = time.monotonic() + 30
    seen = lambda: log.exists() and "submit.abandoned" in log.read_text()  # noqa: E731
    while time.monotonic() < deadline and not seen():
        time.sleep(0.05)
    assert seen()
    assert unchanged(live_judge)
    assert not (live_judge.paths.checkpoints / "submit_000").exists()
    assert live_judge.submit([0]).status == 200  # the next client is served as usual


def test_a_chunked_body_at_the_limit_is_judged(live_judge):
    import http.client
    from urllib.parse import urlsplit

    write_policy(live_judge.paths.system, constant_policy(1))
    head = b'{"env_instances": [0]}'
    body = head + b" " * (MAX_BODY_BYTES - len(head))
    parts = urlsplit(live_judge.url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        connection.request(
            "POST",
            f"{parts.path}/submit",
            body=(body[i : i + 4096] for i in range(0, len(body), 4096)),
            headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"},
            encode_chunked=True,
        )
        assert connection.getresponse().status == 200
    finally:
        connection.close()
    assert live_judge.judge.ledger.used == 1


def test_once_a_server_has_stopped_its_judge_takes_no_more_submits(live_judge):
    from evopolicygym.judge import JudgeServer

    write_policy(live_judge.paths.system, constant_policy(1))
    with JudgeServer(live_judge.judge):
        pass
    response = live_judge.submit([0])  # through the fixture's server, still listening
    assert (response.status, response.body["status"]) == (409, "run_closed")
    assert "stopped serving" in response.body["error"]["message"]
    assert unchanged(live_judge)
