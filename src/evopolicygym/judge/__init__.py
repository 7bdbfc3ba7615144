"""The judge: ledger, submit pipeline, finalization, run integrity and the Flask HTTP server."""

from ._settings import EpisodeRunner, JudgePaths, JudgeSettings
from .app import MAX_BODY_BYTES, JudgeServer, create_app
from .core import Judge, JudgeError
from .finalize import Selection
from .integrity import IntegrityError, interpreter_fingerprint, load_key, seal
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
    "write_atomic",
]
