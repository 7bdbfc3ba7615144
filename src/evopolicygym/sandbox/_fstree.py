"""Tree operations on directories the agent can change while the judge works on them.

Every entry is reached relative to an open descriptor of the directory that holds it, so no
path is resolved again through a component the agent may have swapped meanwhile (a directory
replaced with a symbolic link, ``renameat2(RENAME_EXCHANGE)`` loops), and symbolic links are
never followed: they are copied or removed as links. No function recurses in Python, so the
depth of a tree the agent made never raises ``RecursionError``; every failure is an
``OSError``.

The only paths resolved by name are the ones the caller trusts: a directory the agent cannot
replace (the workspace itself, the run's private directories).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

# A directory opened without following a final symbolic link (ELOOP or ENOTDIR instead).
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO swapped in after the listing is not waited on (fstat then refuses it).
_SOURCE_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_COPY_CHUNK = 2**20


def open_directory(name: str | Path, dir_fd: int | None = None) -> int:
    """A descriptor of the directory ``name`` (relative to ``dir_fd`` when given). Raises
    ``OSError`` (``ELOOP``/``ENOTDIR``) when it is a symbolic link or not a directory."""
    return os.open(name, _DIRECTORY, dir_fd=dir_fd)


@contextlib.contextmanager
def opened_directory(name: str | Path, dir_fd: int | None = None) -> Iterator[int]:
    """:func:`open_directory`, closed on exit."""
    descriptor = open_directory(name, dir_fd)
    try:
        yield descriptor
    finally:
        os.close(descriptor)


def real_directory(dir_fd: int, name: str) -> int:
    """A descriptor of the directory ``name`` in ``dir_fd``; whatever else is there (a symbolic
    link, a file) is removed first, never followed, and a directory made. Raises ``OSError``
    when that still does not give a directory (the agent replaced it again meanwhile)."""
    try:
        return open_directory(name, dir_fd)
    except OSError as exc:
        if exc.errno not in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR):
            raise
    remove_entry(dir_fd, name)
    with contextlib.suppress(FileExistsError):  # made again meanwhile: opened, or refused
        os.mkdir(name, dir_fd=dir_fd)
    return open_directory(name, dir_fd)


def remove_path(path: Path) -> None:
    """Remove ``path`` whatever it is (nothing if absent), through its parent, which the
    caller trusts; see :func:`remove_entry`."""
    with opened_directory(path.parent) as parent:
        remove_entry(parent, path.name)


def remove_entry(dir_fd: int, name: str) -> None:
    """Remove the entry ``name`` of ``dir_fd`` whatever it is, and all it holds: a symbolic
    link is unlinked, never followed. Nothing if absent; entries that vanish meanwhile are
    skipped. Iterative at any depth, with two descriptors open at a time. Raises ``OSError``
    when something cannot be removed, or when a directory being emptied is moved elsewhere
    meanwhile (the removal then stops rather than go on outside the tree)."""
    if _unlink(dir_fd, name):
        _remove_directory(dir_fd, name)


def _unlink(dir_fd: int, name: str) -> bool:
    """Unlink the entry ``name`` of ``dir_fd`` unless it is a directory: True when it is (left
    in place), False when it is gone."""
    try:
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return False
    except OSError as exc:
        if exc.errno not in (errno.EISDIR, errno.EPERM):  # EPERM: what some systems say
            raise
        try:
            mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
        except FileNotFoundError:
            return False
        if not stat.S_ISDIR(mode):
            raise
        return True
    return False


def _remove_directory(dir_fd: int, name: str) -> None:
    """Empty and remove the directory ``name`` of ``dir_fd`` depth first. Only the directory
    being emptied is open: the way back up is ``..``, checked against the identity of the
    directory it came down from, so a subtree moved meanwhile is never climbed out of. Each
    directory is listed once on the way down and once more before it is removed (what was
    added meanwhile)."""
    try:
        current = open_directory(name, dir_fd)
    except FileNotFoundError:
        return
    # From the top down: (name, identity, subdirectories still to empty) of each open level.
    path: list[tuple[str, tuple[int, int], list[str]]] = []
    try:
        path.append((name, _identity(current), _clear_files(current)))
        while path:
            pending = path[-1][2]
            if pending:
                child = pending.pop()
                try:
                    below = open_directory(child, current)
                except OSError as exc:
                    if not _vanished(exc):
                        raise
                    continue
                os.close(current)
                current = below
                path.append((child, _identity(current), _clear_files(current)))
                continue
            pending += _clear_files(current)
            if pending:
                continue
            emptied, _, _ = path.pop()
            parent = _parent(current, dir_fd, path[-1][1] if path else None)
            os.close(current)
            current = parent
            try:
                os.rmdir(emptied, dir_fd=current)
            except OSError as exc:
                # Below the top, an entry refilled or replaced meanwhile is found again when
                # its parent is listed once more.
                if exc.errno != errno.ENOENT and not (path and _vanished(exc)):
                    raise
    finally:
        if current != dir_fd:
            os.close(current)


def _clear_files(dir_fd: int) -> list[str]:
    """Unlink every entry of ``dir_fd`` that is not a directory; the names of those that are
    (still to be emptied)."""
    with os.scandir(dir_fd) as entries:
        names = [entry.name for entry in entries]
    return [name for name in names if _unlink(dir_fd, name)]


def _parent(current: int, top: int, identity: tuple[int, int] | None) -> int:
    """The directory above ``current``: ``top`` for the removal's own entry, else a new
    descriptor of ``..`` that must be the directory of ``identity``."""
    if identity is None:
        return top
    parent = os.open("..", _DIRECTORY, dir_fd=current)
    if _identity(parent) != identity:
        os.close(parent)
        raise OSError(errno.ESTALE, "a directory was moved while the judge removed it")
    return parent


def _identity(descriptor: int) -> tuple[int, int]:
    status = os.fstat(descriptor)
    return status.st_dev, status.st_ino


def _vanished(exc: OSError) -> bool:
    """Whether ``exc`` says an entry was removed, replaced or refilled by someone else
    meanwhile: the next pass over its directory deals with it."""
    return exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.ENOTEMPTY)


def write_file(directory: Path, name: str, data: bytes) -> None:
    """Write ``directory/name`` through a new temporary file and a rename, both relative to a
    descriptor of ``directory`` (which the caller trusts): a symbolic link at ``name`` is
    replaced, never written through. The temporary file gets a name nobody else holds
    (nothing else in ``directory`` is touched)."""
    with opened_directory(directory) as parent:
        while True:
            temporary = f".{name}.{secrets.token_hex(8)}.tmp"
            with contextlib.suppress(FileExistsError):
                descriptor = os.open(temporary, _NEW_FILE, 0o644, dir_fd=parent)
                break
        with open(descriptor, "wb") as handle:
            handle.write(data)
        os.replace(temporary, name, src_dir_fd=parent, dst_dir_fd=parent)


class TreeRefused(OSError):
    """A tree cannot be copied: the entry ``parts`` (its path below the copied directory; empty
    for the directory itself) is ``problem``; ``limit`` names the limit of
    :class:`TreeLimits` it passed (``"bytes"``, ``"entries"``), None for the entry itself."""

    def __init__(self, parts: tuple[str, ...], problem: str, limit: str | None = None):
        super().__init__(f"{'/'.join(parts) or '.'} {problem}")
        self.parts = parts
        self.problem = problem
        self.limit = limit


@dataclass(frozen=True)
class TreeLimits:
    """Bounds on a copy: directory depth (also the number of descriptors it holds), bytes of
    a path below the copied directory, entries copied, bytes read (file contents and link
    targets). None: unbounded."""

    depth: int = 64
    path_bytes: int = 1024
    entries: int | None = None
    bytes: int | None = None


class _Budget:
    def __init__(self, limit: int | None, unit: str):
        self.left = limit
        self.unit = unit

    def require(self, amount: int, parts: tuple[str, ...]) -> None:
        if self.left is not None and amount > self.left:
            raise TreeRefused(parts, f"passes the limit on {self.unit}", self.unit)

    def spend(self, amount: int, parts: tuple[str, ...]) -> None:
        self.require(amount, parts)
        if self.left is not None:
            self.left -= amount


# Whether the entry of this name, at this depth (0: the copied directory's own entries), is
# left out of a copy.
Skip = Callable[[int, str], bool]


def copy_tree(source: int, target: int, limits: TreeLimits, skip: Skip) -> None:
    """Copy the entries of the directory ``source`` into the empty directory ``target`` (both
    descriptors): directories, regular files (mode and times kept) and symbolic links (as
    links, never followed). Iterative, at most ``limits.depth`` directories deep.

    Raises :class:`TreeRefused` for an entry it will not copy: another kind of file, a name or
    link target that is not UTF-8, one the judge cannot read, and for passing a limit (bytes
    are counted as they are read, so neither a file that grows meanwhile nor a sparse file
    passes it). Other ``OSError`` are failures to write ``target``."""
    budget = _Budget(limits.bytes, "bytes")
    entries = _Budget(limits.entries, "entries")
    # (source descriptor, target descriptor, path of that directory, its names left to copy)
    stack: list[tuple[int, int, tuple[str, ...], list[str]]] = []
    try:
        stack.append((os.dup(source), os.dup(target), (), _listing(source, (), entries, skip)))
        while stack:
            source_dir, target_dir, parts, names = stack[-1]
            if not names:
                os.close(source_dir)
                os.close(target_dir)
                stack.pop()
                continue
            name = names.pop()
            here = (*parts, name)
            _check_name(here, limits)
            entries.spend(1, here)
            opened = _copy_entry(source_dir, target_dir, here, budget, limits.depth)
            if opened is not None:
                stack.append((*opened, here, _listing(opened[0], here, entries, skip)))
    finally:
        for source_dir, target_dir, _, _ in stack:
            os.close(source_dir)
            os.close(target_dir)


def _listing(directory: int, parts: tuple[str, ...], entries: _Budget, skip: Skip) -> list[str]:
    """The names to copy from ``directory``, in reverse order (popped from the end), read no
    further than the entry limit allows."""
    names = []
    with _reading(parts), os.scandir(directory) as scanned:
        for entry in scanned:
            if not skip(len(parts), entry.name):
                names.append(entry.name)
                entries.require(len(names), (*parts, entry.name))
    return sorted(names, reverse=True)


def _check_name(parts: tuple[str, ...], limits: TreeLimits) -> None:
    try:
        encoded = "/".join(parts).encode()
    except UnicodeEncodeError:
        raise TreeRefused(parts, "has a name that is not UTF-8") from None
    if len(encoded) > limits.path_bytes:
        raise TreeRefused(parts, f"has a path longer than {limits.path_bytes} bytes")


def _copy_entry(
    source: int, target: int, parts: tuple[str, ...], budget: _Budget, depth: int
) -> tuple[int, int] | None:
    """Copy the entry ``parts[-1]`` of ``source`` into ``target``; for a directory (at most
    ``depth`` levels down), the new descriptors of both (its entries are still to copy)."""
    name = parts[-1]
    with _reading(parts):
        mode = os.stat(name, dir_fd=source, follow_symlinks=False).st_mode
    if stat.S_ISLNK(mode):
        _copy_link(source, target, parts, budget)
    elif stat.S_ISREG(mode):
        _copy_file(source, target, parts, budget)
    elif stat.S_ISDIR(mode):
        if len(parts) > depth:
            raise TreeRefused(parts, f"is nested more than {depth} directories deep")
        with _reading(parts):
            below = open_directory(name, source)
        try:
            os.mkdir(name, dir_fd=target)
            return below, open_directory(name, target)
        except BaseException:
            os.close(below)
            raise
    else:
        raise TreeRefused(parts, f"is a {_kind(mode)}, not a regular file")
    return None


def _copy_link(source: int, target: int, parts: tuple[str, ...], budget: _Budget) -> None:
    with _reading(parts):
        link = os.readlink(parts[-1], dir_fd=source)
    try:
        encoded = link.encode()
    except UnicodeEncodeError:
        raise TreeRefused(parts, "is a symbolic link whose target is not UTF-8") from None
    budget.spend(len(encoded), parts)
    os.symlink(link, parts[-1], dir_fd=target)


def _copy_file(source: int, target: int, parts: tuple[str, ...], budget: _Budget) -> None:
    # The entry may have been swapped since it was listed: fstat says what was really opened.
    with _reading(parts):
        descriptor = os.open(parts[-1], _SOURCE_FILE, dir_fd=source)
    with open(descriptor, "rb") as reader:
        status = os.fstat(reader.fileno())
        if not stat.S_ISREG(status.st_mode):
            raise TreeRefused(parts, f"is a {_kind(status.st_mode)}, not a regular file")
        budget.require(status.st_size, parts)  # at once; growth is caught while copying
        written = os.open(parts[-1], _NEW_FILE, 0o600, dir_fd=target)
        with open(written, "wb") as writer:
            while True:
                with _reading(parts):
                    chunk = reader.read(_COPY_CHUNK)
                if not chunk:
                    break
                budget.spend(len(chunk), parts)
                writer.write(chunk)
            # Permission bits only: a setuid or setgid bit the agent set (its jail's uid may be
            # root's) would make the copy a program that runs as the judge's user.
            os.chmod(writer.fileno(), (status.st_mode & 0o777) | stat.S_IRUSR)
            os.utime(writer.fileno(), ns=(status.st_atime_ns, status.st_mtime_ns))


@contextlib.contextmanager
def _reading(parts: tuple[str, ...]) -> Iterator[None]:
    """A failure to read the source turns into a refusal naming the entry."""
    try:
        yield
    except TreeRefused:
        raise
    except OSError as exc:
        raise TreeRefused(parts, f"cannot be read ({exc.strerror or exc})") from None


def _kind(mode: int) -> str:
    kinds = {
        stat.S_IFIFO: "named pipe",
        stat.S_IFSOCK: "socket",
        stat.S_IFCHR: "character device",
        stat.S_IFBLK: "block device",
    }
    return kinds.get(stat.S_IFMT(mode), "special file")
