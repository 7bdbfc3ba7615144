"""The judge: ledger, submit pipeline, finalization, run integrity and the Flask HTTP server.

The HTTP server (Flask) is loaded on first use (PEP 562): a run starts its lanes first, and
Flask is imported while they boot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evopolicygym._lazy import lazy_exports

from ._settings import EpisodeRunner, JudgePaths, JudgeSettings
from .core import Judge, JudgeError
from .finalize import Selection
from .integrity import IntegrityError, interpreter_fingerprint, load_key, seal, warm_digests
from .ledger import JournalCorrupt, Ledger, utc_now, write_atomic
from .verify import verify_run

__all__ = [
    "MAX_BODY_BYTES",
    "EpisodeRunner",
    "IntegrityError",
    "JournalCorrupt",
    "Judge",
    "JudgeError",
    "JudgePaths",
    "JudgeServer",
    "JudgeSettings",
    "Ledger",
    "Selection",
    "create_app",
    "interpreter_fingerprint",
    "load_key",
    "seal",
    "utc_now",
    "verify_run",
    "warm_digests",
    "write_atomic",
]

if TYPE_CHECKING:
    from .app import MAX_BODY_BYTES, JudgeServer, create_app

__getattr__ = lazy_exports(
    __name__, dict.fromkeys(["MAX_BODY_BYTES", "JudgeServer", "create_app"], "app")
)
