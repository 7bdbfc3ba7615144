"""The agent jail: every agent process runs inside bubblewrap and sees only what it needs.

Built on the policy sandbox's mount list (:func:`evopolicygym.sandbox.bwrap_prefix`), with the
network shared (the agent needs its model API; loopback reaches the judge). Inside, the agent sees:

- its workspace, read-write (the only writable place that outlives a turn, with its CLI state);
- system directories, the Python interpreter's prefix and import path (for Python agents, the
  built-in agents included), its own CLI (the binary, its install directory and the interpreter
  its ``#!`` line names), read-only;
- its configuration and credentials directory (``~/.codex``, ``~/.claude``, ``~/.kimi-code``),
  read-only; the CLI's session store inside it (for example ``~/.codex/sessions``) is bound
  read-write from the run's ``agent_state/``, so sessions persist across turns and resumes but
  never reach the real directory or another run;
- a private ``/tmp``.

It does not see the run's private state (``.judge/``), its logs and checkpoints, the data
(split) directories, other runs, or the repository (only the interpreter's import path, i.e. the
installed package, is visible). It runs as an unprivileged user of its own user namespace with
no capabilities, and dies with the harness.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

JailMode = Literal["auto", "on", "off"]
NETWORK_FILES = ("/etc/resolv.conf", "/etc/hosts", "/etc/host.conf", "/etc/gai.conf")
TMPFS_BYTES = 1 << 30

# Per CLI: its configuration directories (read-only) and, relative to $HOME, the session stores
# it writes (bound read-write from the run's agent_state/). A trailing "/" marks a directory.
CLI_STATE: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "codex": ((".codex",), (".codex/sessions/", ".codex/log/")),
    "claude": (
        (".claude",),
        (
            ".claude/projects/",
            ".claude/todos/",
            ".claude/statsig/",
            ".claude/shell-snapshots/",
            ".claude.json",
        ),
    ),
    "kimi": ((".kimi-code",), (".kimi-code/sessions/", ".kimi-code/session_index.jsonl")),
}


class JailUnavailable(RuntimeError):
    """``jail = "on"`` was asked for but bubblewrap does not work here."""


class JailRecord(BaseModel):
    """How the agent ran; recorded in ``run.json`` under ``isolation.agent``."""

    level: Literal["bwrap", "none"] = Field(..., description="bwrap: jailed; none: not jailed.")
    requested: JailMode = "auto"
    reason: str = Field("", description="Why the jail is off (auto without bubblewrap, off).")
    readable: list[str] = Field(default_factory=list, description="Extra read-only binds.")
    writable: list[str] = Field(default_factory=list, description="Read-write binds.")


@functools.cache
def bwrap_works() -> str | None:
    """None when bubblewrap can start a jail with the shared network here, else why not."""
    from evopolicygym.sandbox import bwrap_prefix

    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    argv = [*bwrap_prefix(bwrap, tmpfs_bytes=1 << 20, share_network=True), "/bin/true"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap failed to start: {exc}"
    if done.returncode != 0:
        return f"bubblewrap cannot create namespaces here: {done.stderr.strip()[:300]}"
    return None


def cli_install_paths(binary: str) -> list[Path]:
    """Read-only paths an agent CLI needs: the binary (as found on PATH and resolved), the
    prefix of an npm package (the directory holding ``lib/node_modules``), and the interpreter
    its ``#!`` line names (``env node`` included) with that interpreter's prefix (the
    directory above its ``bin``, e.g. a Node.js or a virtual environment)."""
    paths: list[Path] = []
    found = shutil.which(binary)
    if found is None:
        return paths
    for candidate in (Path(found), Path(found).resolve()):
        paths += [candidate, *_package_root(candidate)]
    interpreter = _shebang_interpreter(Path(found).resolve())
    if interpreter is not None:
        for candidate in (interpreter, interpreter.resolve()):
            paths += [candidate, *_package_root(candidate)]
            if candidate.parent.name == "bin":
                paths.append(candidate.parent.parent)
    return [p for p in dict.fromkeys(paths) if p.exists()]


def _package_root(path: Path) -> list[Path]:
    parts = path.parts
    if "node_modules" not in parts:
        return []
    root = Path(*parts[: parts.index("node_modules")])
    return [root.parent if root.name == "lib" else root]


def _shebang_interpreter(path: Path) -> Path | None:
    try:
        with path.open("rb") as handle:
            first = handle.readline(256)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", "replace").split()
    if not words:
        return None
    if Path(words[0]).name == "env":
        names = [w for w in words[1:] if not w.startswith("-")]
        located = shutil.which(names[0]) if names else None
        return Path(located) if located else None
    return Path(words[0])


class Jail:
    """The bubblewrap prefix for one run's agent processes.

    ``kind`` is the adapter (codex, claude, kimi: their configuration directories are bound;
    other kinds get none); ``binary`` the CLI or command to make visible, ``files`` further
    files (a command agent's script); ``state`` the run's ``agent_state/`` directory that backs
    the CLI's session stores.
    """

    def __init__(
        self,
        *,
        kind: str,
        binary: str | None,
        workspace: Path,
        state: Path,
        home: Path,
        files: list[Path] = (),
    ) -> None:
        self.kind = kind
        self.workspace = workspace.resolve()
        self.home = home
        self.state = state.resolve()
        config_dirs, stores = CLI_STATE.get(kind, ((), ()))
        readable = [home / d for d in config_dirs if (home / d).is_dir()]
        readable += cli_install_paths(binary) if binary else []
        readable += list(files)
        # Never a directory that holds the run (its .judge/, logs, other runs) or the home.
        run_root = self.workspace.parent
        self.readable = [
            p
            for p in readable
            if p.resolve() not in (Path("/"), home.resolve())
            and not (p.is_dir() and p.resolve() in (run_root, *run_root.parents))
        ]
        self.stores = [
            (home / s.rstrip("/"), self.state / s.rstrip("/"), s.endswith("/")) for s in stores
        ]

    def prepare(self) -> None:
        """Create the session stores in ``agent_state/`` and, where a read-only configuration
        directory lacks them, their mount points (an empty directory or file, as the CLI itself
        would create)."""
        for target, source, is_dir in self.stores:
            if is_dir:
                source.mkdir(parents=True, exist_ok=True)
            else:
                source.parent.mkdir(parents=True, exist_ok=True)
                if not source.exists() and target.is_file():
                    shutil.copyfile(target, source)  # start from the CLI's own settings
                source.touch()
            if any(base in target.parents for base in self.readable) and not target.exists():
                if is_dir:
                    target.mkdir(parents=True)
                else:
                    target.touch()

    def prefix(self) -> list[str]:
        """``bwrap ... --`` to put before an agent command."""
        from evopolicygym.sandbox import bwrap_prefix

        bwrap = shutil.which("bwrap")
        assert bwrap is not None, "call probe_jail first"
        argv = bwrap_prefix(
            bwrap,
            writable=[self.workspace],
            readonly=self.readable,
            tmpfs_bytes=TMPFS_BYTES,
            share_network=True,
            chdir=self.workspace,
        )
        assert argv[-1] == "--"
        argv = argv[:-1]
        for target, source, _ in self.stores:
            argv += ["--bind", str(source), str(target)]
        # Name resolution for the model API (the sandbox list is for offline policy workers).
        for name in NETWORK_FILES:
            argv += ["--ro-bind-try", name, name]
        # The CLI finds its configuration under the real home; the home itself stays empty.
        argv += ["--setenv", "HOME", str(self.home), "--"]
        return argv

    def record(self, requested: JailMode) -> JailRecord:
        return JailRecord(
            level="bwrap",
            requested=requested,
            readable=[str(p) for p in self.readable],
            writable=[str(self.workspace), *(str(t) for t, _, _ in self.stores)],
        )


def probe_jail(requested: JailMode) -> str | None:
    """None when the jail is to be used; otherwise why not (``off``, or ``auto`` without a
    working bubblewrap). Raises :class:`JailUnavailable` for ``on`` without one."""
    if requested == "off":
        return "agent jail off ([agent] jail = off)"
    problem = bwrap_works()
    if problem and requested == "on":
        raise JailUnavailable(f"the agent jail was asked for (jail = on) but {problem}")
    return problem


def default_home() -> Path:
    return Path(os.environ.get("HOME") or Path.home())


def agent_jail(section, harness, workspace: Path, state: Path) -> tuple[list[str], JailRecord]:
    """The jail prefix for ``section``'s agent (empty when not jailed) and its record; points a
    jailed Kimi harness at the run's own session index. Raises :class:`JailUnavailable`."""
    from ._check import find_binary
    from ._kimi import KimiHarness

    requested = section.jail
    reason = probe_jail(requested)
    if reason is not None:
        return [], JailRecord(level="none", requested=requested, reason=reason)
    binary, _ = find_binary(section)
    kind = section.kind
    jail = Jail(
        kind=kind,
        binary=None if kind.startswith("builtin:") else binary,
        workspace=workspace,
        state=state,
        home=default_home(),
        # A command agent's program files named by absolute path (e.g. python /x/agent.py).
        files=[Path(a) for a in section.argv[1:] if os.path.isabs(a) and Path(a).is_file()],
    )
    jail.prepare()
    if isinstance(harness, KimiHarness):
        harness.session_index = state / ".kimi-code" / "session_index.jsonl"
    return jail.prefix(), jail.record(requested)
