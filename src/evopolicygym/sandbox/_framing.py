"""Framed, typed messages over a connected Unix stream socket.

A frame is a 4-byte big-endian length and a MessagePack body decoded into one of the message
types of :mod:`evopolicygym.protocol` (never pickle: the peer may run untrusted code, so the
judge must read anything it sends without executing it, and refuse what is malformed or too
large). File descriptors travel as ``SCM_RIGHTS`` with the first byte of a frame; the receiver
keeps them in arrival order until :meth:`Channel.take_fds` claims them.
"""

from __future__ import annotations

import array
import os
import select
import socket
import struct
import time
from collections import deque
from typing import Any

import msgspec

_LENGTH = struct.Struct(">I")
_ENCODER = msgspec.msgpack.Encoder()
DEFAULT_MAX_BYTES = 1 << 30


class FrameError(RuntimeError):
    """The peer closed the channel or sent something that is not a valid message."""


class ChannelClosed(FrameError):
    """The peer closed the channel (its process ended, or closed its end): nothing more comes.
    Any other :class:`FrameError` is a frame the receiver refused."""


class FrameTimeout(TimeoutError):
    """No complete message arrived before the deadline."""


class Channel:
    """One end of a message channel. ``incoming`` is the type (usually a union of tagged
    structs) every received message must decode to; ``max_bytes`` caps one frame.

    Not thread-safe: one thread sends, and one thread receives, at a time.
    """

    def __init__(
        self,
        sock: socket.socket,
        incoming: Any,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        carries_fds: bool = True,
        enc_hook: Any = None,
    ):
        self.sock = sock
        self.max_bytes = max_bytes
        # enc_hook: turns values MessagePack cannot hold (a policy's NumPy action) into ones it can.
        self._encoder = msgspec.msgpack.Encoder(enc_hook=enc_hook) if enc_hook else _ENCODER
        self.carries_fds = carries_fds  # False: plain reads (per-step channels never pass fds)
        self._decoder = msgspec.msgpack.Decoder(incoming)
        self._buffer = bytearray()
        self._fds: deque[int] = deque()
        self._poll = select.poll()
        self._poll.register(sock.fileno(), select.POLLIN)

    @classmethod
    def from_fd(cls, fd: int, incoming: Any, **kwargs: Any) -> Channel:
        return cls(socket.socket(fileno=fd), incoming, **kwargs)

    def fileno(self) -> int:
        return self.sock.fileno()

    def close(self) -> None:
        while self._fds:
            os.close(self._fds.popleft())
        self.sock.close()

    # -- sending ---------------------------------------------------------------------------------

    def encode(self, message: Any) -> bytes:
        """The body :meth:`send` would frame for ``message``; nothing is sent."""
        return self._encoder.encode(message)

    def send(self, message: Any, fds: list[int] | tuple[int, ...] = ()) -> None:
        """Send one message (and ``fds`` with it). Raises ``OSError`` when the peer is gone."""
        body = self.encode(message)
        frame = _LENGTH.pack(len(body)) + body
        if fds:
            sent = socket.send_fds(self.sock, [frame], list(fds))
            frame = frame[sent:]
        if frame:
            self.sock.sendall(frame)

    # -- receiving -------------------------------------------------------------------------------

    def recv(self, deadline: float | None = None) -> Any:
        """The next message; ``deadline`` is a ``time.monotonic()`` value (None waits forever).
        Raises :class:`FrameTimeout` or :class:`FrameError`."""
        while True:
            message = self._pop_frame()
            if message is not None:
                return message
            if deadline is not None:
                wait = deadline - time.monotonic()
                if wait <= 0 or not self._poll.poll(wait * 1000):
                    raise FrameTimeout("no complete message before the deadline")
            self._fill()

    def recv_nowait(self) -> Any:
        """The next message if one is complete or readable right now, else None."""
        message = self._pop_frame()
        while message is None and self._poll.poll(0):
            self._fill()
            message = self._pop_frame()
        return message

    def take_fds(self, count: int) -> list[int]:
        """Claim the next ``count`` received descriptors (a message that carries descriptors
        says how many); raises :class:`FrameError` if fewer arrived."""
        if len(self._fds) < count:
            raise FrameError(f"expected {count} file descriptors, got {len(self._fds)}")
        return [self._fds.popleft() for _ in range(count)]

    def _pop_frame(self) -> Any:
        buffer = self._buffer
        if len(buffer) < 4:
            return None
        (length,) = _LENGTH.unpack_from(buffer)
        if length > self.max_bytes:
            raise FrameError(f"a {length}-byte message exceeds the {self.max_bytes}-byte cap")
        end = 4 + length
        if len(buffer) < end:
            return None
        try:
            message = self._decoder.decode(memoryview(buffer)[4:end])
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise FrameError(f"malformed message: {exc}") from None
        except (RecursionError, MemoryError) as exc:
            # Nested too deep, or too large once decoded: the peer's fault like any malformed
            # body, never an exception its reader does not expect.
            raise FrameError(f"malformed message: {type(exc).__name__}: {exc}") from None
        del buffer[:end]
        return message

    def _fill(self) -> None:
        want = max(1 << 16, min(self._missing(), 1 << 24))
        if not self.carries_fds:
            try:
                data = self.sock.recv(want)
            except ConnectionResetError:
                data = b""
            if not data:
                raise ChannelClosed("the peer closed the channel")
            self._buffer += data
            return
        fds = array.array("i")
        try:
            data, ancillary, _flags, _addr = self.sock.recvmsg(
                want, socket.CMSG_SPACE(16 * fds.itemsize)
            )
        except ConnectionResetError:
            data, ancillary = b"", []
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
        self._fds.extend(fds)
        if not data:
            raise ChannelClosed("the peer closed the channel")
        self._buffer += data

    def _missing(self) -> int:
        if len(self._buffer) < 4:
            return 4
        return 4 + _LENGTH.unpack_from(self._buffer)[0] - len(self._buffer)


def channel_pair(left: Any, right: Any) -> tuple[Channel, Channel]:
    """Two connected channels decoding ``left`` and ``right`` messages respectively."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    return Channel(a, left), Channel(b, right)
