"""Command lines for bubblewrap sandboxes (policy worker lanes; the agent jail builds on the
same mount list).

The sandbox sees, read-only: the interpreter, the virtual environment and every directory on
the import path, system libraries and a handful of ``/etc`` files; read-write: only the paths
passed as ``writable`` and a private, size-capped ``/tmp``. It gets new user (uid 65534, no
capabilities), pid, network, ipc, uts and cgroup namespaces, its own ``/proc`` and a minimal
``/dev``, and dies with the process that started it.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlparse

SANDBOX_UID = 65534
# System paths visible read-only inside a sandbox (symbolic links are recreated as links).
SYSTEM_PATHS = (
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/bin",
    "/sbin",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/alternatives",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
    "/etc/fonts",
    "/etc/chromium",  # Debian's chromium wrapper sources /etc/chromium.d/* (web family)
    "/etc/chromium.d",
    "/etc/ssl",
    "/etc/ca-certificates",
)


@functools.cache
def import_path() -> tuple[str, ...]:
    """The import path a fresh interpreter of this environment gets (standard library,
    site-packages, ``.pth`` entries such as an editable install's ``src``), without this
    process's script directory, working directory or ``PYTHONPATH``."""
    done = subprocess.run(
        [sys.executable, "-I", "-c", "import json, sys; print(json.dumps(sys.path))"],
        capture_output=True,
        text=True,
        cwd="/",
        check=True,
    )
    return tuple(entry for entry in json.loads(done.stdout) if os.path.isabs(entry))


def interpreter_paths() -> list[Path]:
    """Directories the interpreter needs: its prefix, the virtual environment, every entry of
    a fresh import path, and the location of files pages are served from (MiniWoB++)."""
    paths = {Path(sys.base_prefix), Path(sys.prefix), Path(sys.executable).resolve().parent}
    paths |= {Path(entry) for entry in import_path()}
    miniwob = os.environ.get("MINIWOB_URL", "")
    if miniwob.startswith("file://"):
        paths.add(Path(urlparse(miniwob).path))
    return sorted(path for path in paths if path.exists())


def _minimal(paths: Iterable[Path]) -> list[Path]:
    """Drop paths already below another one (one bind covers them), shortest first."""
    kept: list[Path] = []
    for path in sorted({p.resolve() if not p.is_symlink() else p for p in paths}, key=len_key):
        if not any(path == other or other in path.parents for other in kept):
            kept.append(path)
    return kept


def len_key(path: Path) -> tuple[int, str]:
    return (len(path.parts), str(path))


def bwrap_prefix(
    bwrap: str,
    *,
    writable: Iterable[Path] = (),
    readonly: Iterable[Path] = (),
    tmpfs_bytes: int,
    share_network: bool = False,
    chdir: Path | None = None,
) -> list[str]:
    """``bwrap ... --`` for a sandbox with the mounts described above; append the command."""
    argv = [
        bwrap,
        "--unshare-all",
        *(["--share-net"] if share_network else []),
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_UID),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(tmpfs_bytes),
        "--tmpfs",
        "/tmp",
        "--size",
        str(tmpfs_bytes),
        "--tmpfs",
        "/dev/shm",
    ]
    for name in SYSTEM_PATHS:
        path = Path(name)
        if path.is_symlink():
            argv += ["--symlink", os.readlink(path), name]
        elif path.exists():
            argv += ["--ro-bind", name, name]
    for path in _minimal([*interpreter_paths(), *readonly]):
        if Path("/usr") not in path.parents:
            argv += ["--ro-bind", str(path), str(path)]
    for path in writable:
        argv += ["--bind", str(path), str(path)]
    argv += ["--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp"]
    argv += ["--chdir", str(chdir or "/tmp"), "--"]
    return argv
