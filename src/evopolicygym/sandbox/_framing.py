"""Framed messages over pipes between the judge and a policy worker.

A frame is ``b"EPG1"``, a 4-byte big-endian header length, a UTF-8 JSON header, then the raw
bytes of the blobs whose sizes the header lists under ``"blobs"``. JSON (never pickle) because
the worker runs untrusted code: the judge must be able to read anything a worker sends without
executing it, and must refuse frames that are malformed or too large.
"""

from __future__ import annotations

import os
import select
import struct
import time
from typing import Any

import orjson

MAGIC = b"EPG1"
_PREFIX = struct.Struct(">4sI")
MAX_HEADER_BYTES = 64 * 2**20


class FrameError(RuntimeError):
    """The peer sent something that is not a valid frame, or closed the pipe."""


class FrameTimeout(TimeoutError):
    """No complete frame arrived before the deadline."""


def encode_frame(header: dict[str, Any], blobs: list[bytes] | None = None) -> bytes:
    blobs = blobs or []
    header = {**header, "blobs": [len(blob) for blob in blobs]}
    body = orjson.dumps(header)
    return b"".join([_PREFIX.pack(MAGIC, len(body)), body, *blobs])


def write_frame(fd: int, header: dict[str, Any], blobs: list[bytes] | None = None) -> None:
    data = memoryview(encode_frame(header, blobs))
    while data:
        written = os.write(fd, data)
        data = data[written:]


class FrameReader:
    """Reads frames from a file descriptor with a deadline and a size cap."""

    def __init__(self, fd: int, max_bytes: int = 1 << 30):
        self.fd = fd
        self.max_bytes = max_bytes

    def _read_exact(self, count: int, deadline: float | None) -> bytes:
        chunks: list[bytes] = []
        remaining = count
        while remaining:
            if deadline is not None:
                wait = deadline - time.monotonic()
                if wait <= 0 or not select.select([self.fd], [], [], wait)[0]:
                    raise FrameTimeout(
                        f"no complete frame within the time limit ({count - remaining}/{count} bytes)"
                    )
            chunk = os.read(self.fd, min(remaining, 1 << 20))
            if not chunk:
                raise FrameError("worker closed its pipe")
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)

    def read(self, deadline: float | None = None) -> tuple[dict[str, Any], list[bytes]]:
        """The next frame as ``(header, blobs)``. ``deadline`` is a ``time.monotonic()`` value."""
        magic, length = _PREFIX.unpack(self._read_exact(_PREFIX.size, deadline))
        if magic != MAGIC or length > MAX_HEADER_BYTES:
            raise FrameError("malformed frame prefix")
        try:
            header = orjson.loads(self._read_exact(length, deadline))
        except orjson.JSONDecodeError as exc:
            raise FrameError(f"malformed frame header: {exc}") from exc
        sizes = header.get("blobs", []) if isinstance(header, dict) else None
        if not isinstance(sizes, list) or not all(isinstance(s, int) and s >= 0 for s in sizes):
            raise FrameError("malformed frame header: blobs must list sizes")
        if sum(sizes) > self.max_bytes:
            raise FrameError(f"frame of {sum(sizes)} bytes exceeds the {self.max_bytes}-byte cap")
        return header, [self._read_exact(size, deadline) for size in sizes]
