"""The judge's end of workers' stdout and stderr pipes: drained continuously, capped per
episode at the source, so that no policy can fill a disk or a log with raw writes to a file
descriptor (``print`` output is captured inside the worker; this catches everything else)."""

from __future__ import annotations

import contextlib
import os
import selectors
import threading
from pathlib import Path

from ._capture import cut_marker


class _Stream:
    def __init__(self, fd: int, cap: int):
        self.fd = fd
        self.cap = cap
        self.kept = bytearray()
        self.dropped = 0
        self.lock = threading.Lock()
        self.closed = False

    def read_available(self) -> bool:
        """Read what the pipe holds now; False at end of file."""
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return True
            except OSError:
                data = b""
            if not data:
                self.closed = True
                return False
            room = self.cap - len(self.kept)
            if room > 0:
                self.kept += data[:room]
            self.dropped += max(0, len(data) - max(room, 0))

    def cut(self) -> str:
        text = self.kept.decode("utf-8", errors="replace")
        if self.dropped:
            text += cut_marker(self.dropped, self.cap, "bytes written to a file descriptor")
        self.kept = bytearray()
        self.dropped = 0
        return text


class OutputDrain:
    """One thread draining the stdout/stderr pipes of every worker of a pool.

    :meth:`cut` returns what a worker wrote since the last cut (capped at ``cap`` bytes per
    stream, with a note of what was dropped); output nobody cuts (sealed workers, environment
    start-up) goes to ``log`` when the worker ends, capped the same way."""

    def __init__(self, log: Path | None):
        self.log = log
        self._selector = selectors.DefaultSelector()
        self._lock = threading.Lock()
        self._streams: dict[int, tuple[_Stream, _Stream, str]] = {}
        self._wake_read, self._wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._selector.register(self._wake_read, selectors.EVENT_READ)
        self._thread = threading.Thread(target=self._run, name="worker-output", daemon=True)
        self._stopped = False
        self._thread.start()

    def add(self, key: int, stdout_fd: int, stderr_fd: int, cap: int, label: str) -> None:
        streams = (_Stream(stdout_fd, cap), _Stream(stderr_fd, cap), label)
        for stream in streams[:2]:
            os.set_blocking(stream.fd, False)
        with self._lock:
            self._streams[key] = streams
            for stream in streams[:2]:
                self._selector.register(stream.fd, selectors.EVENT_READ, stream)
        os.write(self._wake_write, b"x")

    def cut(self, key: int) -> tuple[str, str]:
        """``(stdout, stderr)`` written by worker ``key`` since the previous cut."""
        with self._lock:
            entry = self._streams.get(key)
        if entry is None:
            return "", ""
        texts = []
        for stream in entry[:2]:
            with stream.lock:
                if not stream.closed:
                    stream.read_available()
                texts.append(stream.cut())
        return texts[0], texts[1]

    def remove(self, key: int) -> None:
        """Forget worker ``key``: its uncut output goes to the log, its pipes are closed."""
        with self._lock:
            entry = self._streams.pop(key, None)
            if entry is None:
                return
            for stream in entry[:2]:
                with contextlib.suppress(KeyError, ValueError):
                    self._selector.unregister(stream.fd)
        out, err = (self._finish(stream) for stream in entry[:2])
        if (out or err) and self.log is not None:
            with open(self.log, "a", encoding="utf-8") as handle:
                handle.write(f"--- {entry[2]}\n{out}{err}")

    def _finish(self, stream: _Stream) -> str:
        with stream.lock:
            if not stream.closed:
                stream.read_available()
            text = stream.cut()
            os.close(stream.fd)
            stream.closed = True
        return text

    def close(self) -> None:
        with self._lock:
            keys = list(self._streams)
        for key in keys:
            self.remove(key)
        self._stopped = True
        os.write(self._wake_write, b"x")
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stopped:
            for key, _events in self._selector.select():
                if key.fileobj == self._wake_read:
                    with contextlib.suppress(BlockingIOError):
                        os.read(self._wake_read, 4096)
                    continue
                stream: _Stream = key.data
                with stream.lock:
                    if stream.closed:
                        continue
                    if not stream.read_available():
                        with self._lock, contextlib.suppress(KeyError, ValueError):
                            self._selector.unregister(stream.fd)
