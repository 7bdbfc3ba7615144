"""The judge: ledger, submit pipeline, finalization and the Flask HTTP server."""

from .app import MAX_BODY_BYTES, JudgeServer, create_app
from .core import Judge, JudgeError, JudgePaths, JudgeSettings, Selection
from .ledger import Ledger, utc_now, write_atomic

__all__ = [
    "MAX_BODY_BYTES",
    "Judge",
    "JudgeError",
    "JudgePaths",
    "JudgeServer",
    "JudgeSettings",
    "Ledger",
    "Selection",
    "create_app",
    "utc_now",
    "write_atomic",
]
