"""Red-team tests: a hostile agent (HTTP access to the judge, write access to its workspace)
against a real judge on loopback with real policy workers.

Each test asserts a promise of the harness (docs/protocol/, docs/SECURITY.md); a failing test is
a hole."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from evopolicygym.judge import MAX_BODY_BYTES, JudgeServer, Ledger
from evopolicygym.judge.ledger import drafts_directory
from support import LiveJudge, constant_policy, write_policy


def _sleeping_policy(seconds: float, episode: int | None = None) -> str:
    """A policy whose every act (only in ``episode``, when given) sleeps ``seconds``, then
    returns 1."""
    when = "True" if episode is None else f"episode_index == {episode}"
    return f"""
import time
class Policy:
    def __init__(self, obs_space, action_space, env_meta):
        pass
    def reset(self, episode_index):
        self.slow = {when}
    def act(self, obs):
        if self.slow:
            time.sleep({seconds})
        return 1
"""


def _ledger_consistent(live_judge) -> bool:
    """episode_budget = remaining_budget + sum of n_episodes over judged submits."""
    ledger = live_judge.judge.ledger
    return ledger.budget == ledger.remaining + sum(s.cost for s in ledger.submits)


def _visible_episode_results(workspace_feedback: Path) -> int:
    """How many episode trajectories the agent can read anywhere under feedback/ (hidden
    temporary directories included)."""
    return sum(1 for _ in workspace_feedback.rglob("trajectory.jsonl"))


def _raw(
    url: str,
    request: bytes,
    *,
    timeout: float = 30,
    half_close: bool = False,
    first_answer_only: bool = False,
) -> tuple[int, bytes]:
    """Send ``request`` as is over a fresh connection; the answer's status and body."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=timeout) as client:
        client.sendall(request)
        if half_close:
            client.shutdown(socket.SHUT_WR)
        data = b""
        while True:
            chunk = client.recv(65536)
            if not chunk:
                break
            data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            length = [
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            ]
            if first_answer_only and length and len(body) >= length[0]:
                break
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


# -- feedback directory planted by the agent ------------------------------------------------------


def test_a_symlink_planted_at_the_next_feedback_directory_buys_no_unpaid_episodes(live_judge):
    # Promise: every episode the agent can read is charged (budget = remaining + sum of costs),
    # and a submit is answered 200 (charged) or 4xx (nothing ran), never "ran but uncharged".
    write_policy(live_judge.paths.system, constant_policy(1))
    feedback = live_judge.paths.feedback
    seen = 0
    for _ in range(3):
        index = live_judge.request("GET", "/info").body["state"]["n_submits"]
        planted = feedback / f"submit_{index:03d}"
        if not planted.is_symlink():
            planted.symlink_to("/nonexistent-evopolicygym-target")
        response = live_judge.submit("0-2")
        seen = _visible_episode_results(feedback)
        if response.status == 200:
            break
    assert response.status < 500, response.body
    assert seen <= live_judge.judge.ledger.used, (
        f"the agent can read {seen} episode trajectories but was charged "
        f"{live_judge.judge.ledger.used}"
    )


def test_results_of_a_running_submit_are_not_readable_before_it_is_charged(live_judge):
    # Promise (feedback.md, FeedbackDraft): the agent sees all of a submit's feedback or none of
    # it, and only once it is charged; a submit interrupted before its commit is rolled back
    # uncharged, so whatever it played must not have been readable by the agent.
    write_policy(live_judge.paths.system, _sleeping_policy(4, episode=3))
    result = {}
    thread = threading.Thread(target=lambda: result.update(r=live_judge.submit("0-3")))
    thread.start()
    feedback = live_judge.paths.feedback
    seen_before_commit = 0
    while thread.is_alive():
        if live_judge.judge.ledger.used == 0:
            seen_before_commit = max(seen_before_commit, _visible_episode_results(feedback))
        time.sleep(0.05)
    thread.join()
    assert result["r"].status == 200
    assert seen_before_commit == 0, (
        f"{seen_before_commit} trajectories of an uncharged submit were readable in "
        f"{sorted(p.name for p in feedback.iterdir())}"
    )


def test_a_symlinked_feedback_directory_cannot_make_the_judge_overwrite_another_run(
    live_judge, tmp_path
):
    # Promise (SECURITY.md): an agent, even jailed to its workspace, cannot change another
    # run's state (a jailed agent cannot even see it). feedback/ is the agent's to replace; the
    # judge follows a symlink there with its own rights, and the feedback commit removes and
    # replaces <target>/submit_NNN: another run's checkpoint, which is then never scored.
    victim = tmp_path / "other-run" / "checkpoints"
    write_policy(victim / "submit_000", constant_policy(2))
    before = (victim / "submit_000" / "policy.py").read_text()
    write_policy(live_judge.paths.system, constant_policy(1))
    feedback = live_judge.paths.feedback
    feedback.rmdir()
    feedback.symlink_to(victim)
    live_judge.submit([0])
    assert (victim / "submit_000" / "policy.py").exists(), sorted(
        str(p.relative_to(victim)) for p in victim.rglob("*")
    )
    assert (victim / "submit_000" / "policy.py").read_text() == before


def test_a_symlinked_system_directory_is_refused_not_followed(live_judge, tmp_path):
    # Promise (SECURITY.md): the judge never copies, with its own rights, files the agent could
    # not read itself: a system/ that links to another run's checkpoint is a charged refusal,
    # and no checkpoint is taken from it.
    victim = tmp_path / "other-run" / "checkpoints" / "submit_000"
    write_policy(victim, constant_policy(2))
    system = live_judge.paths.system
    for path in system.iterdir():
        path.unlink()
    system.rmdir()
    system.symlink_to(victim)
    response = live_judge.submit([0])
    assert (response.status, response.body["status"]) == (200, "import_error")
    assert "system is a symbolic link" in response.body["summary"]["message"]
    assert not (live_judge.paths.checkpoints / "submit_000").exists()
    assert live_judge.judge.ledger.used == 1


# -- crash recovery trusts the workspace ----------------------------------------------------------


def _crash_before_publish(live_judge) -> dict:
    """Run one charged 3-episode submit, then put its feedback back where a judge killed
    between the journal's commit and the rename leaves it (in the judge's drafts); returns the
    honest summary."""
    write_policy(live_judge.paths.system, constant_policy(1))
    assert live_judge.submit("0-2").status == 200
    published = live_judge.paths.feedback / "submit_000"
    honest = json.loads((published / "summary.json").read_text())
    published.rename(drafts_directory(live_judge.paths.private) / "submit_000")
    return honest


def _crash_before_commit(live_judge) -> None:
    """As :func:`_crash_before_publish`, killed one step earlier: the commit never journaled."""
    _crash_before_publish(live_judge)
    journal = live_judge.paths.private / "journal.jsonl"
    lines = journal.read_text().splitlines(keepends=True)
    assert json.loads(lines[-1])["type"] == "submit_commit"
    journal.write_text("".join(lines[:-1]))


def _resume(live_judge) -> Ledger:
    paths = live_judge.paths
    return Ledger.open(
        paths.private / "journal.jsonl",
        live_judge.judge.settings.budget,
        checkpoints=paths.checkpoints,
        feedback=paths.feedback,
    )


def _plant_summary(live_judge, text: str) -> None:
    planted = live_judge.paths.feedback / "submit_000"
    planted.mkdir()
    (planted / "summary.json").write_text(text)


@pytest.mark.parametrize(
    "forge",
    [
        lambda s: s.update(env_instances=[0]),
        lambda s: s.update(status="budget_invalid", n_episodes=0),
        lambda s: s.update(returns=[1e9, 1e9, 1e9], mean_return=1e9),
        lambda s: s.update(submit_index=5),
    ],
    ids=["fewer-ids", "status-reject", "returns", "index"],
)
def test_a_summary_planted_by_the_agent_changes_nothing_at_resume(live_judge, forge):
    # Promise (submit-lifecycle.md, crash recovery): a submit is charged exactly
    # len(env_instances) of its request, its record comes from the journal, and what the agent
    # writes in feedback/ is never read back: the resume publishes the judge's own feedback.
    honest = _crash_before_publish(live_judge)
    forged = dict(honest)
    forge(forged)
    _plant_summary(live_judge, json.dumps(forged))
    ledger = _resume(live_judge)
    assert ledger.used == 3 and ledger.next_index == 1
    record = ledger.submits[0]
    assert (record.index, record.status, record.cost) == (0, "ok", 3)
    assert record.returns == honest["returns"]
    published = live_judge.paths.feedback / "submit_000" / "summary.json"
    assert json.loads(published.read_text()) == honest


@pytest.mark.parametrize(
    "content",
    ['{"status": "pwned"}', "[]", "not json", '{"submit_index": 0, "status": "ok"}'],
    ids=["unknown-status", "not-an-object", "not-json", "missing-fields"],
)
@pytest.mark.parametrize("crash", [_crash_before_commit, _crash_before_publish])
def test_a_garbled_summary_does_not_make_the_run_impossible_to_resume(live_judge, content, crash):
    # Promise (operations: resume): a run killed at any point resumes with the same command;
    # the agent-writable summary.json must not be able to stop that.
    crash(live_judge)
    _plant_summary(live_judge, content)
    ledger = _resume(live_judge)
    assert ledger.used == (3 if crash is _crash_before_publish else 0)
    assert _ledger_consistent(live_judge)


def test_a_checkpoint_changed_between_a_crash_and_the_resume_is_not_taken_as_submitted(
    live_judge,
):
    # Promise (artifacts.md, SECURITY.md): the journal keeps each ok submit's tree_hash *taken
    # at submit*, so a checkpoint changed afterwards is `tampered` and never scored; a submit
    # the crash caught before its commit is rolled back with its checkpoint.
    _crash_before_commit(live_judge)
    write_policy(live_judge.paths.checkpoints / "submit_000", constant_policy(2))
    ledger = _resume(live_judge)
    assert ledger.used == 0 and not (live_judge.paths.checkpoints / "submit_000").exists()


# -- finalization ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [".system.old", ".system.mirror"])
def test_a_symlink_planted_in_the_workspace_cannot_stop_finalization(live_judge, name):
    # Promise (scoring.md, artifacts.md): when the budget is spent the judge validates, picks the
    # best checkpoint, mirrors it into system/ and writes run.json; nothing the agent leaves in
    # its workspace can keep a run from finishing.
    write_policy(live_judge.paths.system, constant_policy(2))
    assert live_judge.submit("0-5").status == 200
    (live_judge.paths.workspace / name).symlink_to("/nonexistent-evopolicygym-target")
    selection = live_judge.judge.finalize()
    assert selection.best == 0
    assert (live_judge.paths.system / "policy.py").read_text() == (
        live_judge.paths.checkpoints / "submit_000" / "policy.py"
    ).read_text()


HOSTILE_AGENT = """
import json, os, sys, urllib.request
from pathlib import Path

system = Path(os.environ["EVOPOLICYGYM_SYSTEM"])
for line in sys.stdin:
    turn = json.loads(line)["turn"]
    system.mkdir(exist_ok=True)
    (system / "policy.py").write_text(
        "class Policy:\\n"
        "    def __init__(self, o, a, m):\\n        pass\\n"
        "    def reset(self, i):\\n        pass\\n"
        "    def act(self, obs):\\n        return 2\\n"
    )
    old = system.parent / ".system.old"
    if not old.is_symlink():
        old.symlink_to("/nonexistent")
    request = urllib.request.Request(
        os.environ["EVOPOLICYGYM_SUBMIT_URL"],
        data=json.dumps({"env_instances": "0-3"}).encode(),
        headers={"Content-Type": "application/json"},
    )
    status = json.load(urllib.request.urlopen(request))["status"]
    print(json.dumps({"turn": turn, "text": status}), flush=True)
"""


def test_a_run_whose_agent_planted_a_symlink_still_finishes_and_resumes(tmp_path):
    # Promise (operations, artifacts.md): a run ends with run.json, and a run without one
    # resumes with `evopolicygym run --resume`. An agent that leaves workspace/.system.old as a
    # symlink makes the final mirror raise after the held-out score is journaled, every time.
    agent = tmp_path / "agent.py"
    agent.write_text(HOSTILE_AGENT)
    root = tmp_path / "run"
    run = [sys.executable, "-m", "evopolicygym.cli", "run", "--env", "toy", "--root", str(root)]
    run += ["--budget", "4", "--jobs", "1", "--agent", "command", "--", sys.executable, str(agent)]
    first = subprocess.run(run, capture_output=True, text=True, timeout=600)
    if not (root / "run.json").exists():
        # A crash is what resume is for: the same run resumed must finish now.
        again = [sys.executable, "-m", "evopolicygym.cli", "run", "--resume", str(root)]
        resumed = subprocess.run(again, capture_output=True, text=True, timeout=600)
        assert (root / "run.json").exists(), (
            f"run failed ({first.stderr.strip().splitlines()[-1]}), and so does every resume "
            f"({resumed.stderr.strip().splitlines()[-1]})"
        )
    record = json.loads((root / "run.json").read_text())
    assert record["outcome"]["status"] == "completed"


# -- system/ contents at snapshot -----------------------------------------------------------------


def _fifo(system: Path) -> None:
    os.mkfifo(system / "pipe.py")


def _socket(system: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(system / "sock"))
    server.close()


def _sparse_giant(system: Path) -> None:
    with open(system / "weights.bin", "wb") as handle:
        handle.truncate(300 * 2**20)  # sparse: no disk used, 300 MiB by size


def _undecodable_name(system: Path) -> None:
    (system / os.fsdecode(b"data_\xff.bin")).write_bytes(b"x")


def _parser_bomb(system: Path) -> None:
    (system / "helper.py").write_text("x = " + "-" * 200_000 + "1\n")


@pytest.mark.parametrize(
    "plant",
    [
        pytest.param(_fifo, id="fifo"),
        pytest.param(_socket, id="unix-socket"),
        pytest.param(_sparse_giant, id="over-256MiB"),
        pytest.param(_undecodable_name, id="non-utf8-name"),
        pytest.param(_parser_bomb, id="parser-memory-error"),
    ],
)
def test_odd_files_in_system_get_a_verdict_not_a_500(live_judge, plant):
    # Promise (http-api.md): 500 is a fault of the judge; what the agent puts in system/ is
    # judged (a failure verdict, charged) or refused with a reason (4xx), and the budget
    # identity holds either way.
    write_policy(live_judge.paths.system, constant_policy(1))
    plant(live_judge.paths.system)
    response = live_judge.submit([0, 1])
    assert response.status < 500, response.body
    assert _ledger_consistent(live_judge)
    if response.status == 200:
        assert live_judge.judge.ledger.used == 2
    # The judge still serves the next, ordinary submit.
    for path in list(live_judge.paths.system.iterdir()):
        if path.name != "policy.py":
            path.unlink()
    assert live_judge.submit([2]).status == 200


GROWER = r"""
import ctypes, os, struct, sys
system, target, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init()
libc.inotify_add_watch(fd, system.encode(), 0x20)  # IN_OPEN
print("ready", flush=True)
opens = 0
while True:
    data = os.read(fd, 4096)
    pos = 0
    while pos < len(data):
        wd, mask, cookie, length = struct.unpack_from("iIII", data, pos)
        name = data[pos + 16 : pos + 16 + length].rstrip(b"\0")
        pos += 16 + length
        if not name and mask & 0x40000000:  # IN_ISDIR: system/ itself was opened
            opens += 1
            if opens == 2:  # 1: the size check's walk, 2: the copy's listing
                with open(target, "r+b") as handle:
                    handle.truncate(size)  # sparse: the agent spends no disk
                print("grown", flush=True)
                sys.exit(0)
"""


def test_the_256_mib_snapshot_cap_holds_when_a_file_grows_after_the_size_check(
    live_judge, tmp_path
):
    # Promise (submit-lifecycle.md step 5): a tree over 256 MiB is refused. The size is summed
    # over system/ and the copy is made afterwards, so a file grown in between (here by an
    # agent process watching system/ with inotify; any size, sparse) is copied, read into the
    # judge's memory and sent to the workers whole.
    write_policy(live_judge.paths.system, constant_policy(1))
    weights = live_judge.paths.system / "weights.bin"
    weights.write_bytes(b"")
    script = tmp_path / "grower.py"
    script.write_text(GROWER)
    grower = subprocess.Popen(
        [sys.executable, str(script), str(live_judge.paths.system), str(weights), str(300 << 20)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert grower.stdout.readline().strip() == "ready"
        response = live_judge.submit([0])
    finally:
        grower.kill()
        grower.wait()
    checkpoint = live_judge.paths.checkpoints / "submit_000"
    copied = sum(p.lstat().st_size for p in checkpoint.rglob("*")) if checkpoint.exists() else 0
    (checkpoint / "weights.bin").unlink(missing_ok=True)  # 300 MiB of real zeros on disk
    assert copied <= 256 << 20, f"checkpoint of {copied} bytes accepted ({response.status})"


MEMORY_PROBE = """
import json, sys
from pathlib import Path
from support import constant_policy, serve_judge, write_policy


def peak_kib():  # VmHWM: this process's peak RSS (ru_maxrss would carry the parent's over exec)
    status = Path("/proc/self/status").read_text()
    return int(next(l for l in status.splitlines() if l.startswith("VmHWM")).split()[1])


with serve_judge(Path(sys.argv[1]), jobs=1) as live:
    write_policy(live.paths.system, constant_policy(1))
    rows = "    (1, 2, 3, 4, 5, 6, 7, 8),\\n" * 40_000
    (live.paths.system / "table.py").write_text("T = [\\n" + rows + "]\\n")
    live.request("GET", "/info")
    before = peak_kib()
    status = live.submit([0]).status
    after = peak_kib()
    print(json.dumps({"status": status, "growth_kib": after - before, "before_kib": before}))
"""


def test_judging_a_large_python_file_does_not_take_hundreds_of_times_its_size_in_the_judge(
    tmp_path,
):
    # Promise (SECURITY.md): nothing in system/ can exhaust the machine; the judge itself has no
    # memory limit. It parses every .py file of a checkpoint with `ast` (static scan and
    # metrics) in its own process: ~300x the source size, so the 256 MiB cap allows ~75 GiB.
    # A 1.2 MB data table is measured here in a fresh process.
    script = tmp_path / "probe.py"
    script.write_text(MEMORY_PROBE)
    tests = Path(__file__).parent.parent
    result = subprocess.run(
        [sys.executable, str(script), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tests,
        env={**os.environ, "PYTHONPATH": str(tests)},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    probe = json.loads(result.stdout.splitlines()[-1])
    assert probe["status"] == 200, probe
    assert probe["growth_kib"] < 64 * 1024, f"the judge grew by {probe['growth_kib'] // 1024} MiB"


@pytest.mark.parametrize("name", ["data/metrics.json", "data/_meta.json", "data/.keep"])
def test_a_data_file_beside_the_policy_reaches_the_policy_whatever_its_name(live_judge, name):
    # Promise (workspace.md): system/ MAY hold data files beside policy.py, and the checkpoint is
    # a snapshot of system/. A data file that happens to be named like a judge bookkeeping file
    # (metrics.json, _meta.json, .keep) at any depth is left out of the hash and of the files
    # sent to the workers, so the policy cannot read it (and it can change unnoticed later).
    write_policy(
        live_judge.paths.system,
        f"""
        from pathlib import Path
        class Policy:
            def __init__(self, obs_space, action_space, env_meta):
                self.action = len((Path(__file__).parent / {name!r}).read_text())
            def reset(self, episode_index):
                pass
            def act(self, obs):
                return self.action
        """,
    )
    data = live_judge.paths.system / name
    data.parent.mkdir(parents=True, exist_ok=True)
    data.write_text("12")
    response = live_judge.submit([0])
    assert response.body["status"] == "ok", response.body["summary"].get("message")


def test_no_submit_is_still_running_once_the_judge_has_stopped_serving(live_judge):
    # Promise (http-api.md): when the agent's turn ends the judge stops serving HTTP, then
    # finalizes and writes run.json from the ledger. Stopping the server does not wait for a
    # submit in flight (e.g. from a process the agent left behind), so it commits after the
    # judge has moved on: run.json (written from the ledger without the judge lock) can miss a
    # charged submit, or call a run whose last submit is still running "agent_stopped".
    write_policy(live_judge.paths.system, _sleeping_policy(2))
    with JudgeServer(live_judge.judge) as server:
        client = LiveJudge(live_judge.judge, live_judge.paths, server.url)
        thread = threading.Thread(target=lambda: client.submit([0]))
        thread.start()
        deadline = time.monotonic() + 10
        while live_judge.judge.ledger.lines < 2 and time.monotonic() < deadline:
            time.sleep(0.01)  # the submit has begun (open, submit_begin)
    used_when_stopped = live_judge.judge.ledger.used
    thread.join()
    assert live_judge.judge.ledger.used == used_when_stopped, (
        "a submit was charged after the server stopped"
    )


# -- HTTP framing ---------------------------------------------------------------------------------


def _secret_path(live_judge, route: str) -> str:
    return urlsplit(live_judge.url).path + route


def test_a_chunked_body_over_the_limit_is_413_not_cut_to_64_kib_and_charged(live_judge):
    # Promise (http-api.md): a body over 64 KiB is 413 and nothing is charged, however it is
    # framed. With Transfer-Encoding: chunked the body is silently cut at 64 KiB instead, so a
    # 1 MiB body that is not even valid JSON as a whole is judged on its first 64 KiB.
    write_policy(live_judge.paths.system, constant_policy(1))
    netloc = urlsplit(live_judge.url).netloc
    head = b'{"env_instances": [0, 1, 2]}'
    payload = head + b" " * (MAX_BODY_BYTES - len(head)) + b'"and 1 MiB more"' + b" " * 2**20
    chunks = b"".join(
        f"{len(payload[i : i + 4096]):x}\r\n".encode() + payload[i : i + 4096] + b"\r\n"
        for i in range(0, len(payload), 4096)
    )
    request = (
        (
            f"POST {_secret_path(live_judge, '/submit')} HTTP/1.1\r\nHost: {netloc}\r\n"
            "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
            "Connection: close\r\n\r\n"
        ).encode()
        + chunks
        + b"0\r\n\r\n"
    )
    status, body = _raw(live_judge.url, request, first_answer_only=True)
    assert live_judge.judge.ledger.used == 0, "an over-limit body was charged"
    assert status == 413, body


def test_a_half_closed_client_still_gets_its_submit_judged(live_judge):
    # Promise (http-api.md): only a client that disconnected is refused (client_gone). A client
    # that half-closes its socket after sending the request (shutdown(SHUT_WR), as `nc -N` and
    # some HTTP libraries do) is still waiting for the answer and must be judged.
    write_policy(live_judge.paths.system, constant_policy(1))
    parts = urlsplit(live_judge.url)
    body = b'{"env_instances": [0]}'
    request = (
        f"POST {parts.path}/submit HTTP/1.1\r\nHost: {parts.netloc}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode() + body
    answer = {}

    def send() -> None:
        answer["status"], answer["body"] = _raw(live_judge.url, request, half_close=True)

    client = threading.Thread(target=send)
    with live_judge.judge._lock:  # queued behind another submit, as in test_app.py
        client.start()
        time.sleep(0.5)
    client.join()
    status, answer = answer["status"], answer["body"]
    assert status == 200, answer
    assert live_judge.judge.ledger.used == 1


@pytest.mark.parametrize("length", ["-1", "abc", "99999999999999999999", "10, 10"])
def test_a_bad_content_length_is_a_4xx(live_judge, length):
    # Promise (http-api.md): a malformed request gets a 4xx, never a 5xx or a hang, and costs
    # nothing.
    netloc = urlsplit(live_judge.url).netloc
    request = (
        f"POST {_secret_path(live_judge, '/submit')} HTTP/1.1\r\nHost: {netloc}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n"
        "Connection: close\r\n\r\n"
    ).encode() + b'{"env_instances":[0]}'
    status, body = _raw(live_judge.url, request, timeout=15)
    assert 400 <= status < 500, body
    assert live_judge.judge.ledger.next_index == 0


def test_path_tricks_never_reach_a_route_without_the_secret(live_judge):
    # Promise (http-api.md, Access): only a path starting with /<secret>/ is served.
    secret = urlsplit(live_judge.url).path.strip("/")
    netloc = urlsplit(live_judge.url).netloc
    for path in [
        f"/%2e%2e/{secret}/info",
        f"/{secret}%2f/../info",
        f"/x/../{secret}/info",
        "/%2e%2e/info",
        f"/{secret.upper()}/info",
        f"/{secret[:-1]}%{ord(secret[-1]):02x}/info",
    ]:
        request = f"GET {path} HTTP/1.1\r\nHost: {netloc}\r\nConnection: close\r\n\r\n".encode()
        status, body = _raw(live_judge.url, request)
        if path.endswith(f"%{ord(secret[-1]):02x}/info"):
            assert status == 200  # percent-encoding of the secret itself is the same URL
            continue
        assert status in (401, 404), (path, status, body)
        assert b"remaining_budget" not in body


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1:{port}.", "127.0.0.1.:{port}", "127.1:{port}", "0x7f.0.0.1:{port}", "0:{port}"],
)
def test_near_miss_host_headers_are_refused(live_judge, host):
    # Promise (http-api.md, Access): only the judge's own Host names are served (DNS
    # rebinding); spellings that resolve to loopback but are not those names are refused.
    port = urlsplit(live_judge.url).port
    request = (
        f"GET {_secret_path(live_judge, '/info')} HTTP/1.1\r\nHost: {host.format(port=port)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    assert _raw(live_judge.url, request)[0] == 403


def test_slow_clients_do_not_block_other_requests(live_judge):
    # Promise (http-api.md): /info answers while other requests are in flight.
    netloc = urlsplit(live_judge.url).netloc
    parts = urlsplit(live_judge.url)
    idle = []
    for _ in range(50):
        client = socket.create_connection((parts.hostname, parts.port))
        client.sendall(
            f"POST {_secret_path(live_judge, '/submit')} HTTP/1.1\r\nHost: {netloc}\r\n"
            "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{".encode()
        )
        idle.append(client)
    try:
        started = time.monotonic()
        assert live_judge.request("GET", "/info").status == 200
        assert time.monotonic() - started < 5
    finally:
        for client in idle:
            client.close()


def _raw_submit(live_judge, headers: str, body: bytes) -> tuple[int, bytes]:
    """POST /submit with ``headers`` (each ending in CRLF) and ``body`` sent as given."""
    netloc = urlsplit(live_judge.url).netloc
    request = (
        f"POST {_secret_path(live_judge, '/submit')} HTTP/1.1\r\nHost: {netloc}\r\n"
        f"Content-Type: application/json\r\n{headers}Connection: close\r\n\r\n"
    ).encode() + body
    return _raw(live_judge.url, request, timeout=15)


def test_a_malformed_chunk_header_is_a_400_not_a_500(live_judge):
    # Promise (http-api.md): a malformed request gets a 4xx with a JSON reason, never a 5xx, and
    # costs nothing. werkzeug's chunk reader raises OSError("Invalid chunk header") out of the
    # body read, which the judge answered 500 internal_error.
    write_policy(live_judge.paths.system, constant_policy(1))
    status, body = _raw_submit(
        live_judge, "Transfer-Encoding: chunked\r\n", b'zz\r\n{"env_instances": [0]}\r\n0\r\n\r\n'
    )
    assert status == 400, body
    answer = json.loads(body)
    assert answer["status"] == answer["error"]["code"] == "bad_request"
    assert "chunk" in answer["error"]["message"]
    assert live_judge.judge.ledger.next_index == 0 and live_judge.judge.ledger.used == 0


def test_a_body_framed_by_both_chunked_and_content_length_is_refused(live_judge):
    # Promise (http-api.md): a request whose body is ambiguous is not judged. With both
    # Transfer-Encoding: chunked and Content-Length, werkzeug reads the chunks and ignores the
    # length, where another reader (a proxy) would take the first 3 bytes.
    write_policy(live_judge.paths.system, constant_policy(1))
    payload = b'{"env_instances": [0]}'
    chunked = f"{len(payload):x}\r\n".encode() + payload + b"\r\n0\r\n\r\n"
    status, body = _raw_submit(
        live_judge, "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n", chunked
    )
    assert status == 400, body
    answer = json.loads(body)
    assert answer["error"]["code"] == "bad_request"
    assert "ambiguous" in answer["error"]["message"]
    assert live_judge.judge.ledger.next_index == 0 and live_judge.judge.ledger.used == 0


def test_a_body_with_a_repeated_key_is_refused_not_read_last_one_wins(live_judge):
    # Promise (http-api.md): the body has exactly one field, env_instances. A body naming it
    # twice was read with the last value winning: the case it runs depends on the parser.
    write_policy(live_judge.paths.system, constant_policy(1))
    raw = b'{"env_instances": [99999], "env_instances": "0"}'
    response = live_judge.request("POST", "/submit", raw=raw)
    assert (response.status, response.body["status"]) == (400, "bad_request"), response.body
    assert "repeats the key 'env_instances'" in response.body["error"]["message"]
    assert live_judge.judge.ledger.next_index == 0 and live_judge.judge.ledger.used == 0


@pytest.mark.parametrize("route", ["/submit", "/info", "/task", "/health", "/finalize"])
def test_options_is_a_wrong_method_with_a_json_405(live_judge, route):
    # Promise (http-api.md): every answer but /task's is JSON, and a wrong method on a known
    # path is 405 method_not_allowed. Flask answered OPTIONS itself: 200 with an empty body.
    netloc = urlsplit(live_judge.url).netloc
    request = (
        f"OPTIONS {_secret_path(live_judge, route)} HTTP/1.1\r\nHost: {netloc}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    status, body = _raw(live_judge.url, request)
    assert status == 405, body
    answer = json.loads(body)
    assert answer["status"] == answer["error"]["code"] == "method_not_allowed"
    assert live_judge.judge.ledger.next_index == 0
