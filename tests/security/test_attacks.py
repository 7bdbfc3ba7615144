"""One test per attack a hostile policy can try, at every isolation level this machine offers.

Each asserts the precise verdict (or what the level lets through, where SECURITY.md lists it as
a gap of that level) and that the next submit is served normally.
"""

from __future__ import annotations

import os
import site
import time
from urllib.parse import urlparse

import pytest

from evopolicygym.rollout import pool as pool_module
from evopolicygym.sandbox._proctree import descendants
from support import process_exists


def test_infinite_loop_in_init_is_init_timeout(arena):
    outcome = arena.attack(
        """
        class Policy:
            def __init__(self, *args):
                while True:
                    pass
        """
    )
    assert outcome.status == "init_timeout"
    arena.served_normally()


def test_infinite_loop_in_reset_or_act_is_an_act_timeout(arena):
    outcome = arena.attack(
        """
        class Policy:
            def __init__(self, *args): pass
            def reset(self, i):
                self.i = i
                while i == 0:
                    pass
            def act(self, obs):
                while True:
                    pass
        """,
        episodes=2,
    )
    assert outcome.status == "ok"
    first, second = outcome.error(0), outcome.error(1)
    assert first["category"] == "act_timeout" and first["message"].startswith("reset() exceeded")
    assert second["category"] == "act_timeout" and second["message"].startswith("act() exceeded")
    assert "while True" in second["traceback"]
    arena.served_normally()


def test_a_loop_that_blocks_the_watchdog_is_killed_by_the_judge(arena, monkeypatch):
    monkeypatch.setattr(pool_module, "EPISODE_GRACE_S", 1.0)
    outcome = arena.attack(
        """
        import signal
        class Policy:
            def __init__(self, *args): pass
            def reset(self, i): pass
            def act(self, obs):
                signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
                while True:
                    pass
        """
    )
    error = outcome.error()
    assert error["category"] == "episode_timeout" and "killed" in error["message"]
    arena.served_normally()


# Generous time limits: an allocation bomb must be stopped by the memory limit, however slowly
# a loaded machine zero-fills its chunks.
@pytest.mark.limits(init_timeout_s=30.0, act_timeout_s=30.0, rollout_wall_s=60.0)
def test_memory_bombs_are_oom(arena):
    outcome = arena.attack(
        """
        class Policy:
            def __init__(self, *args):
                self.chunks = []
                while True:
                    self.chunks.append(bytearray(16 * 2**20))
        """
    )
    assert outcome.status == "oom" and "MemoryError" in outcome.summary["message"]
    outcome = arena.attack(
        """
        class Policy:
            def __init__(self, *args): pass
            def reset(self, i): pass
            def act(self, obs):
                hog = []
                while True:
                    hog.append(bytearray(16 * 2**20))
        """
    )
    assert outcome.error()["category"] == "oom", outcome.error()
    arena.served_normally()


def _settled(limit: int, seconds: float = 5.0) -> list[int]:
    """This (judge) process's descendants once at most ``limit`` remain (or after ``seconds``)."""
    deadline = time.monotonic() + seconds
    while True:
        found = descendants(os.getpid())
        if len(found) <= limit or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


@pytest.mark.limits(act_timeout_s=30.0, rollout_wall_s=60.0)
def test_a_fork_bomb_hits_the_process_cap_and_leaves_nothing_behind(arena):
    arena.served_normally()  # lanes up: the judge's own processes are counted in `before`
    before = len(_settled(0, seconds=0))
    outcome = arena.attack(
        """
        import os, time
        class Policy:
            def __init__(self, *args): pass
            def reset(self, i): pass
            def act(self, obs):
                while True:
                    if os.fork() == 0:
                        while True:
                            try:
                                os.fork()
                            except OSError:
                                time.sleep(0.01)
        """
    )
    error = outcome.error()
    assert (
        error["category"] == "act_error" and "Resource temporarily unavailable" in error["message"]
    )
    # Up to 15 s: on a loaded machine, killing a few dozen spinning processes takes a while.
    left = _settled(before, seconds=15.0)
    assert len(left) <= before, "processes of the fork bomb outlived its episode"
    arena.served_normally()


def test_a_thread_bomb_fails_its_episode(arena):
    outcome = arena.attack(
        """
        import threading, time
        class Policy:
            def __init__(self, *args): pass
            def reset(self, i): pass
            def act(self, obs):
                while True:
                    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
        """
    )
    error = outcome.error()
    assert error["category"] in ("act_error", "oom")
    assert "can't start new thread" in error["message"] or "MemoryError" in error["message"]
    arena.served_normally()


def test_a_daemon_dies_with_its_episode_whatever_session_it_moved_to(arena):
    token = f"{987 + os.getpid() % 1000}.125"
    outcome = arena.attack(
        f"""
        import os, time
        DAEMONS = []
        class Policy:
            def __init__(self, *args): pass
            def reset(self, i): self.i = i
            def act(self, obs):
                if self.i == 0:
                    reader, writer = os.pipe()
                    if os.fork() == 0:
                        os.setsid()
                        daemon = os.fork()
                        if daemon == 0:
                            os.execvp("sleep", ["sleep", "{token}"])
                        os.write(writer, str(daemon).encode())
                        os._exit(0)
                    os.wait()
                    DAEMONS.append(int(os.read(reader, 32)))
                    return 0
                try:
                    os.kill(DAEMONS[0], 0)
                    print("daemon alive")
                except ProcessLookupError:
                    print("daemon gone")
                return 0
        """,
        episodes=2,
    )
    assert outcome.status == "ok" and [e.error for e in outcome.episodes] == [None, None]
    # Killed at the end of its episode, before the next one began ...
    assert outcome.episodes[1].stdout == "daemon gone\n"
    # ... and nowhere on the machine afterwards.
    assert not process_exists(f"sleep\0{token}"), "the daemon outlived its episode"
    arena.served_normally()


def test_network_access(arena):
    port = urlparse(arena.live.url).port
    outcome = arena.attack(
        f"""
        import socket
        class Policy:
            def __init__(self, *args): pass
            def reset(self, i): pass
            def act(self, obs):
                for name, family, kind in (
                    ("tcp", socket.AF_INET, socket.SOCK_STREAM),
                    ("udp", socket.AF_INET6, socket.SOCK_DGRAM),
                    ("netlink", socket.AF_NETLINK, socket.SOCK_RAW),
                ):
                    try:
                        s = socket.socket(family, kind)
                        if name == "tcp":
                            # A submit to the judge, as a policy that found its port would try.
                            s.settimeout(5)
                            s.connect(("127.0.0.1", {port}))
                            body = b'{{"env_instances": [0]}}'
                            s.sendall(
                                b"POST /submit HTTP/1.0\\r\\nHost: 127.0.0.1:{port}\\r\\n"
                                b"Content-Type: application/json\\r\\n"
                                b"Content-Length: %d\\r\\n\\r\\n%s" % (len(body), body)
                            )
                            print(name, s.recv(64).split()[1].decode())
                        else:
                            print(name, "open")
                        s.close()
                    except OSError as exc:
                        print(name, type(exc).__name__)
                return 0
        """
    )
    lines = dict(line.split() for line in outcome.episodes[0].stdout.split("\n") if line)
    if arena.level == "process":
        # A gap of the level (SECURITY.md): sockets are allowed. The judge still refuses a
        # request without the run's secret, and charges nothing for it.
        assert lines["tcp"] == "401"
        assert arena.live.judge.ledger.used == 1
    else:
        assert lines == {
            "tcp": "PermissionError",
            "udp": "PermissionError",
            "netlink": "PermissionError",
        }
    arena.served_normally()


def _reads_and_writes(tmp_path, arena) -> dict[str, str]:
    """Plant secrets outside the sandbox, let a policy try to read and write them, and return
    ``{target: "ok" | exception name}``."""
    secret = tmp_path / "data" / "heldout.json"
    secret.parent.mkdir()
    secret.write_text('{"cases": [{"seed": 47113601}]}')
    other_run = tmp_path / "other-run"
    other_run.mkdir()
    (other_run / "run.json").write_text("{}")
    paths = arena.paths
    probe_file = os.path.join(site.getsitepackages()[0], "zz_evopolicygym_attack_probe.pth")
    targets = {
        "read split file": ("r", secret),
        "read judge memory map": ("r", f"/proc/{os.getpid()}/maps"),
        "read run key": ("r", paths.private / "key"),
        "write checkpoint": ("a", paths.checkpoints / "submit_000" / "policy.py"),
        "write journal": ("a", paths.private / "journal.jsonl"),
        "write feedback": ("w", paths.feedback / "planted.txt"),
        "write other run": ("w", other_run / "run.json"),
        "write site-packages": ("w", probe_file),
    }
    listed = [(name, mode, str(path)) for name, (mode, path) in targets.items()]
    policy = f"TARGETS = {listed!r}\n" + (
        "class Policy:\n"
        "    def __init__(self, *args): pass\n"
        "    def reset(self, i): pass\n"
        "    def act(self, obs):\n"
        "        for name, mode, path in TARGETS:\n"
        "            try:\n"
        "                with open(path, mode) as handle:\n"
        "                    handle.read() if mode == 'r' else handle.write('# planted')\n"
        "                print(name, '=', 'ok')\n"
        "            except OSError as exc:\n"
        "                print(name, '=', type(exc).__name__)\n"
        "        return 0\n"
    )
    try:
        outcome = arena.attack(policy)
    finally:
        if os.path.exists(probe_file):
            os.unlink(probe_file)
    return dict(
        line.split(" = ") for line in outcome.episodes[0].stdout.splitlines() if " = " in line
    )


def test_run_state_hidden_files_and_the_interpreter_are_out_of_reach(arena, tmp_path):
    arena.served_normally()  # submit 0: an ok checkpoint the attack will try to rewrite
    results = _reads_and_writes(tmp_path, arena)
    assert len(results) == 8
    if arena.level == "process":
        # Gaps of the level: everything the judge's user can reach is reachable. What the
        # judge does about it: a rewritten checkpoint is never scored (tampered) and an edited
        # journal stops the run (test_run_state.py).
        memory = results.pop("read judge memory map")
        assert set(results.values()) == {"ok"}, results
        # Even here a judge running as root keeps its memory: the worker dropped every
        # capability, and reading a more privileged process needs them.
        assert memory == ("PermissionError" if os.geteuid() == 0 else "ok")
        selection = arena.live.judge.finalize()
        assert 0 in selection.tampered and 0 not in selection.val_scores
    else:
        assert "ok" not in results.values(), results
        selection = arena.live.judge.finalize()
        assert selection.tampered == [] and 0 in selection.val_scores


def test_a_segfault_through_ctypes_is_a_worker_crash(arena):
    outcome = arena.attack(
        """
        import ctypes
        class Policy:
            def __init__(self, *args): pass
            def reset(self, i): pass
            def act(self, obs):
                return ctypes.string_at(0)
        """
    )
    error = outcome.error()
    assert error["category"] == "worker_crash" and "SIGSEGV" in error["message"]
    arena.served_normally()


def test_exiting_ends_only_the_episode(arena):
    outcome = arena.attack(
        """
        import os, sys
        class Policy:
            def __init__(self, *args): pass
            def reset(self, i): self.i = i
            def act(self, obs):
                if self.i == 0:
                    os._exit(3)
                sys.exit(4)
        """,
        episodes=2,
    )
    assert (
        outcome.error(0)["category"] == "worker_crash" and "status 3" in outcome.error(0)["message"]
    )
    assert (
        outcome.error(1)["category"] == "act_error"
        and "SystemExit: 4" in outcome.error(1)["message"]
    )
    arena.served_normally()


def test_floods_of_output_are_capped_at_the_source(arena):
    outcome = arena.attack(
        """
        import os
        class Policy:
            def __init__(self, *args): pass
            def reset(self, i): pass
            def act(self, obs):
                chunk = "x" * 2**20
                for _ in range(64):
                    print(chunk)
                    os.write(1, b"y" * 2**20)
                    os.write(2, b"z" * 2**20)
                return 0
        """
    )
    episode = outcome.episodes[0]
    assert episode.error is None
    assert len(episode.stdout) < 3 * 4096 and "cut" in episode.stdout
    assert len(episode.stderr) < 2 * 4096 and "cut" in episode.stderr
    log = arena.paths.logs / "workers.log"
    assert not log.exists() or log.stat().st_size < 2**20
    arena.served_normally()


TAMPERING = """
import gc, sys


def _never(*args, **kwargs):
    raise SystemError("patched by the policy")


class Policy:
    def __init__(self, *args):
        from evopolicygym.envs import Turn
        for obj in gc.get_objects():
            if type(obj).__name__.endswith("World"):
                type(obj).step = lambda world, action: Turn(0, 1000.0, True, False, {})
        lockstep = sys.modules.get("evopolicygym.rollout._lockstep")
        if lockstep is not None:  # what a sealed worker would run, were it in this process
            lockstep.LockstepRunner.run = _never

    def reset(self, i):
        pass

    def act(self, obs):
        return 2
"""


def test_monkeypatching_cannot_change_a_hidden_score(arena):
    outcome = arena.attack(TAMPERING, episodes=2)
    # In a train episode the policy shares its worker with the environment: it can fool its
    # own feedback (documented). Hidden evaluation runs it in a separate process.
    assert outcome.summary["returns"] == [1000.0, 1000.0]
    selection = arena.live.judge.finalize()
    valid = arena.live.judge.settings.splits.valid
    assert selection.val_scores[0] == sum(seed % 8 + 2.0 for seed in valid) / len(valid)
    assert selection.heldout is not None and selection.heldout.mean < 1000


def test_a_checkpoint_changed_after_its_submit_is_never_scored(arena):
    arena.served_normally()
    arena.served_normally()
    policy = arena.paths.checkpoints / "submit_001" / "policy.py"
    policy.write_text(policy.read_text().replace("self.action", "7 or self.action"))
    selection = arena.live.judge.finalize()
    assert selection.tampered == [1] and selection.best == 0
    assert arena.live.judge.ledger.validation[1].failure == "tampered"
