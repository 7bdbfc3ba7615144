"""Process isolation for policy code: framed pipes, resource limits, isolation probing."""

from ._framing import FrameError, FrameReader, FrameTimeout, encode_frame, write_frame
from ._limits import SIGNAL_VERDICTS, apply_rlimits

__all__ = [
    "SIGNAL_VERDICTS",
    "FrameError",
    "FrameReader",
    "FrameTimeout",
    "apply_rlimits",
    "encode_frame",
    "write_frame",
]
