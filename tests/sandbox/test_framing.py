"""Framed, typed messages over a Unix socket pair: what is sent arrives decoded, and what is
malformed, too large or late is refused without executing anything."""

import socket
import struct
import time

import msgspec
import pytest

from evopolicygym.protocol import Acted, EpisodeErrorKind, SlotError, Step
from evopolicygym.sandbox._framing import (
    Channel,
    ChannelClosed,
    FrameError,
    FrameTimeout,
    channel_pair,
)


def test_a_sent_message_arrives_decoded_as_its_type_and_encode_gives_its_body():
    worker, policy = channel_pair(Acted, Step)
    step = Step([(0, 3, 1.0)], [(0, [0.5, -1.0], 1.0), (1, None, 0.25)], None)
    worker.send(step)
    assert policy.recv(time.monotonic() + 5) == step
    assert worker.encode(step) == msgspec.msgpack.encode(step)
    acted = Acted(
        [[1.0, 2.0], None],
        [SlotError(1, "act", EpisodeErrorKind.ACT_ERROR, "boom", None)],
        [0.1, 0.2],
    )
    policy.send(acted)
    assert worker.recv(time.monotonic() + 5) == acted


def _raw_pair(incoming, **kwargs) -> tuple[socket.socket, Channel]:
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    return left, Channel(right, incoming, **kwargs)


def test_a_malformed_body_is_a_frame_error():
    raw, channel = _raw_pair(Step)
    body = msgspec.msgpack.encode({"not": "a step"})
    raw.sendall(struct.pack(">I", len(body)) + body)
    with pytest.raises(FrameError, match="malformed message") as refused:
        channel.recv(time.monotonic() + 5)
    assert not isinstance(refused.value, ChannelClosed)  # a refused frame, its peer still there


def test_a_frame_over_the_cap_is_refused_before_its_body_arrives():
    raw, channel = _raw_pair(Step, max_bytes=1024)
    raw.sendall(struct.pack(">I", 1 << 20))  # announces a megabyte, sends none of it
    with pytest.raises(FrameError, match="exceeds the 1024-byte cap") as refused:
        channel.recv(time.monotonic() + 5)
    assert not isinstance(refused.value, ChannelClosed)


def test_a_silent_peer_times_out_and_a_closed_one_is_a_closed_channel():
    raw, channel = _raw_pair(Step)
    started = time.monotonic()
    with pytest.raises(FrameTimeout):
        channel.recv(started + 0.2)
    assert time.monotonic() - started >= 0.2
    raw.sendall(struct.pack(">I", 10) + b"12345")  # half a frame, then the peer goes
    raw.close()
    with pytest.raises(ChannelClosed, match="closed"):
        channel.recv(time.monotonic() + 5)
