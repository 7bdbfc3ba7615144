"""Loading a checkpoint into the process that runs it: its files into a scratch directory, then
``policy.py`` imported and ``Policy`` constructed, once or several times.

Every instance gets its own copy of the checkpoint's modules (``policy`` and whatever else of
``system/`` it imports), executed from code compiled once: instances that play episodes side
by side share no module globals. A checkpoint module is one whose name is not imported already
when loading starts (as with a plain import, an installed package that is already loaded wins).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from evopolicygym.protocol import CheckpointFile, Load, LoadFailed, Verdict

from ._capture import CappedWriter, PolicyTimeout, Watchdog, near_memory_limit


def write_checkpoint(files: list[CheckpointFile], system: Path) -> None:
    """Recreate a checkpoint's files below ``system`` (paths never leave it). ``system`` must
    not exist yet: its scratch directory is made before the checkpoint arrives, and a
    ``system`` that someone made there meanwhile (planted modules) raises ``FileExistsError``
    instead of being imported with the checkpoint."""
    system.mkdir(parents=True)
    root = system.resolve()
    for item in files:
        target = (system / item.path).resolve() if item.link is None else system / item.path
        parent = target.parent.resolve()
        if parent != root and root not in parent.parents:
            continue  # a path that escapes system/ (the judge never sends one)
        parent.mkdir(parents=True, exist_ok=True)
        if item.link is not None:
            os.symlink(item.link, target)
        else:
            target.write_bytes(item.data)


def relative_traceback(exc: BaseException, system: Path | None) -> str:
    """The traceback from the first frame of policy code on, with scratch paths shown as
    ``system/`` paths so the agent recognises its files."""
    frames = traceback.extract_tb(exc.__traceback__)
    prefix = str(system) if system else None
    start = next((i for i, f in enumerate(frames) if prefix and f.filename.startswith(prefix)), 0)
    lines = ["Traceback (most recent call last):\n"]
    lines += traceback.format_list(frames[start:])
    lines += traceback.format_exception_only(type(exc), exc)
    text = "".join(lines)
    return text.replace(prefix + "/", "system/") if prefix else text


# How long describing an exception may take (its ``__str__`` is policy code too), and how much
# of its message and traceback is kept (the start: where the traceback's frames are).
DESCRIBE_TIMEOUT_S = 1.0
MESSAGE_CHARS = 4096
TRACEBACK_CHARS = 65536


def describe_failure(
    exc: BaseException, system: Path | None, watchdog: Watchdog
) -> tuple[str, str]:
    """``("Type: message", traceback)`` of an exception that policy code raised, both safe to
    send. The exception's ``__str__`` is policy code as well: each text is made under the
    watchdog for at most :data:`DESCRIBE_TIMEOUT_S`, and one that raises, hangs or returns text
    that is not valid UTF-8 (lone surrogates are escaped) leaves a placeholder instead of taking
    its process down; a longer text is cut (:data:`MESSAGE_CHARS`, :data:`TRACEBACK_CHARS`)."""
    try:
        message = watchdog.call(DESCRIBE_TIMEOUT_S, _headline, exc)
    except BaseException:
        # The class's own name, past whatever its metaclass makes of ``__name__``.
        name = type.__dict__["__name__"].__get__(type(exc))
        message = f"{name}: <its text cannot be shown>"
    try:
        text = watchdog.call(DESCRIBE_TIMEOUT_S, relative_traceback, exc, system)
    except BaseException:
        text = ""
    return _sendable(message, MESSAGE_CHARS), _sendable(text, TRACEBACK_CHARS)


def _headline(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _sendable(text: str, limit: int) -> str:
    if len(text) > limit:
        text = f"{text[:limit]}... ({len(text) - limit} more characters)"
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class _CompiledFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the checkpoint's modules from code compiled once, a fresh module per import."""

    def __init__(self, code: dict[str, tuple[Any, Path, bool]]):
        self.code = code  # module name -> (code object, file, is package)

    def find_spec(self, name, path=None, target=None):
        entry = self.code.get(name)
        if entry is None:
            return None
        _, file, package = entry
        spec = importlib.machinery.ModuleSpec(name, self, origin=str(file), is_package=package)
        spec.has_location = True
        if package:
            spec.submodule_search_locations = [str(file.parent)]
        return spec

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        code, file, _ = self.code[module.__name__]
        module.__file__ = str(file)
        exec(code, module.__dict__)


class CheckpointLoader:
    """Imports a checkpoint written to ``system`` and builds ``Policy`` instances from it."""

    def __init__(self, system: Path, load: Load, watchdog: Watchdog, limits: dict[str, Any]):
        self.system = system
        self.load = load
        self.watchdog = watchdog
        self.limits = limits
        self._finder: _CompiledFinder | None = None

    def forget(self) -> None:
        """Undo what loading changed in this process: the checkpoint's modules, its finder
        and its entry on ``sys.path``."""
        if self._finder is None:
            return
        for name in self._finder.code:
            sys.modules.pop(name, None)
        sys.meta_path.remove(self._finder)
        sys.path.remove(str(self.system))
        sys.path_importer_cache.pop(str(self.system), None)
        self._finder = None

    def _compile(self) -> None:
        """Compile every ``.py`` file of the checkpoint whose module name is not taken."""
        code: dict[str, tuple[Any, Path, bool]] = {}
        for file in sorted(self.system.rglob("*.py")):
            parts = file.relative_to(self.system).with_suffix("").parts
            package = parts[-1] == "__init__"
            if package:
                parts = parts[:-1]
            if not parts or not all(part.isidentifier() for part in parts):
                continue
            name = ".".join(parts)
            if name in sys.modules and name != "policy":
                continue
            code[name] = (compile(file.read_bytes(), str(file), "exec"), file, package)
        self._finder = _CompiledFinder(code)
        sys.meta_path.insert(0, self._finder)
        sys.path.insert(0, str(self.system))

    def import_policy(self) -> Any:
        """A fresh copy of the checkpoint's modules; returns the new ``policy`` module."""
        if self._finder is None:
            self._compile()
        assert self._finder is not None
        for name in self._finder.code:
            sys.modules.pop(name, None)
        return importlib.import_module("policy")

    def construct(self, module: Any) -> Any:
        policy_class = getattr(module, "Policy", None)
        if policy_class is None:
            raise AttributeError("policy.py defines no class Policy")
        return policy_class(self.load.obs_space, self.load.action_space, self.load.env_meta)

    def build(self) -> Any:
        """Another independent instance (after :meth:`first` succeeded)."""
        return self.construct(self.import_policy())

    def first(self) -> tuple[Any, LoadFailed | None, str, str]:
        """Import and construct the first instance under the init time limit, capturing its
        output: returns ``(policy or None, failure or None, stdout, stderr)``."""
        limit = self.limits["init_timeout_s"]
        cap = self.limits["output_bytes"]
        out, err = CappedWriter(cap), CappedWriter(cap)
        sys.stdout, sys.stderr = out, err
        phase = Verdict.IMPORT_ERROR
        self.watchdog.deadline = time.monotonic() + limit
        try:
            module = self.import_policy()
            phase = Verdict.INIT_ERROR
            policy = self.construct(module)
        except PolicyTimeout as exc:
            verdict = Verdict.OOM if near_memory_limit() else Verdict.INIT_TIMEOUT
            return None, self._failure(verdict, exc, out, err), "", ""
        except MemoryError as exc:
            return None, self._failure(Verdict.OOM, exc, out, err), "", ""
        except BaseException as exc:
            return None, self._failure(phase, exc, out, err), "", ""
        finally:
            self.watchdog.deadline = float("inf")
            sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        return policy, None, out.value(), err.value()

    def _failure(
        self, verdict: Verdict, exc: BaseException, out: CappedWriter, err: CappedWriter
    ) -> LoadFailed:
        message, text = describe_failure(exc, self.system, self.watchdog)
        if isinstance(exc, PolicyTimeout):
            message = f"import + Policy() took longer than {self.limits['init_timeout_s']} s"
            if verdict is Verdict.OOM:
                message += " while holding its memory limit (MemoryError-bound)"
        return LoadFailed(
            verdict=verdict,
            message=message,
            traceback=text,
            stdout=out.value(),
            stderr=err.value(),
        )


# What :func:`rehearse_load` loads: a checkpoint as small as one can be.
_REHEARSAL_FILES = [
    CheckpointFile("policy.py", b"class Policy:\n    def __init__(self, *args): pass\n")
]


def rehearse_load(watchdog: Watchdog, limits: dict[str, Any]) -> None:
    """Load a trivial checkpoint once, then forget it. A process forked from a lane host copies
    each page it first writes to, and its first load writes to those of the import system and
    the compiler: about a millisecond here, which this takes off the first real load. Call it
    before hardening (it writes a scratch directory under the temporary directory) and before
    any real checkpoint arrives; nothing of it stays behind."""
    try:
        scratch = Path(tempfile.mkdtemp(prefix="rehearsal-"))
    except OSError:
        return  # nowhere to write: the first real load pays for the pages instead
    try:
        write_checkpoint(_REHEARSAL_FILES, scratch / "system")
        empty = Load(files=[], tree_hash="", obs_space={}, action_space={}, env_meta={})
        loader = CheckpointLoader(scratch / "system", empty, watchdog, limits)
        try:
            loader.first()
        finally:
            loader.forget()
    except OSError:
        pass
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
