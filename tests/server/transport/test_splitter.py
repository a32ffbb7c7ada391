"""The socket's reads cut into whole frames (``server.transport.splitter``), on any cut.

A stream of client frames of every kind the splitter tells apart (moves, moves
the hook declines, text, pings, a message in fragments with a ping inside it,
frames without a mask, frames with an extension bit, 16-bit lengths) is cut
into reads at arbitrary places.  Whatever the cut, the hook gets exactly the
payloads of the frames it may take, unmasked and in order; aiohttp's handler
gets every other frame's bytes, whole and in order, and what came before a
taken frame reaches it before the hook sees that frame.  The stand-ins for
aiohttp's handler and queue record what they are handed; ``test_direct.py`` runs
the same splitter under a real server, with aiohttp's parser and queue setting its
hook and halting it.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.transport.framing import frame_extent
from server.transport.splitter import FrameSplitter, unmask


def frame(payload: bytes, first: int = 0x82, *, masked: bool = True) -> bytes:
    key = os.urandom(4) if masked else b""
    body = bytes(b ^ key[i % 4] for i, b in enumerate(payload)) if masked else payload
    bit = 0x80 if masked else 0
    if len(payload) < 126:
        return bytes((first, bit | len(payload))) + key + body
    if len(payload) < 1 << 16:
        return bytes((first, bit | 126)) + len(payload).to_bytes(2, "big") + key + body
    return bytes((first, bit | 127)) + len(payload).to_bytes(8, "big") + key + body


@dataclass
class Queue:
    """aiohttp's queue as the splitter reads it: what is queued, what was taken."""

    _buffer: list[bytes] = field(default_factory=list)
    taken: int = 0


@dataclass
class Handler:
    """aiohttp's request handler: records the bytes handed to it (``queues``: as aiohttp
    would queue the messages in them, which keeps later frames from the hook)."""

    queue: Queue
    queues: bool = False
    got: bytearray = field(default_factory=bytearray)
    _force_close: bool = False
    _close: bool = False

    def data_received(self, data: bytes) -> None:
        assert data, "an empty read handed on"
        self.got += data
        if self.queues:
            self.queue._buffer.append(data)


def setup(queues: bool = False, limit: int = 1 << 16) -> tuple[FrameSplitter, Handler, list[Any]]:
    queue = Queue()
    handler = Handler(queue, queues)
    seen: list[Any] = []

    def hook(payload: bytes | str) -> bool:
        assert type(payload) is bytes
        seen.append((payload, len(handler.got)))  # what the handler had by then
        return not payload.startswith(b"\0")  # a payload starting with 0 is declined

    splitter = FrameSplitter(handler, queue, limit)
    splitter.hook = hook
    return splitter, handler, seen


payloads = st.binary(max_size=300)
#: A frame: its bytes, its first byte, whether it has a mask, its payload.
Frame = tuple[bytes, int, bool, bytes]


def one(payload: bytes, first: int = 0x82, masked: bool = True) -> list[Frame]:
    return [(frame(payload, first, masked=masked), first, masked, payload)]


#: One frame, or a message in fragments (a ping among them, or a new message inside it,
#: which aiohttp refuses).
piece = st.one_of(
    payloads.map(one),  # a move (the hook declines one starting with 0)
    payloads.map(lambda p: one(p, 0x81)),  # text
    st.binary(max_size=125).map(lambda p: one(p, 0x89)),  # ping
    payloads.map(lambda p: one(p, masked=False)),  # no mask: aiohttp closes
    payloads.map(lambda p: one(p, 0xC2)),  # an extension bit: aiohttp closes
    st.tuples(payloads, payloads, payloads).map(
        lambda ps: one(ps[0], 0x02) + one(b"", 0x89) + one(ps[1], 0x00) + one(ps[2], 0x80)
    ),
    st.tuples(payloads, payloads).map(lambda ps: one(ps[0], 0x02) + one(ps[1])),
)


def expected(frames: list[Frame], queues: bool) -> tuple[list[tuple[bytes, int]], bytes]:
    """What the hook is offered (each payload, with the bytes handed on before it) and
    the bytes handed on, by the module's rule."""
    offered: list[tuple[bytes, int]] = []
    rest = bytearray()
    fragmented = False
    for raw, first, masked, payload in frames:
        if first == 0x82 and masked and not fragmented:
            if not (queues and rest):
                offered.append((payload, len(rest)))
                if not payload.startswith(b"\0"):
                    continue
        elif first & 0x0F in (0x1, 0x2):
            fragmented = not first & 0x80
        elif first & 0x0F == 0 and first & 0x80:
            fragmented = False
        rest += raw
    return offered, bytes(rest)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(piece, max_size=12), st.lists(st.integers(0, 4000), max_size=8), st.booleans())
def test_any_cut_gives_the_hook_its_frames_and_aiohttp_the_rest_in_order(
    pieces: list[list[Frame]], cuts: list[int], queues: bool
) -> None:
    splitter, handler, seen = setup(queues)
    frames = [f for p in pieces for f in p]
    stream = b"".join(raw for raw, *_ in frames)
    bounds = sorted({min(c, len(stream)) for c in cuts} | {0, len(stream)})
    for start, stop in itertools.pairwise(bounds):
        splitter.data_received(stream[start:stop])
    offered, rest = expected(frames, queues)
    assert seen == offered
    assert bytes(handler.got) == rest
    assert splitter.taken + handler.queue.taken == sum(
        not p.startswith(b"\0") for p, _ in offered
    )
    assert splitter.head == b""


def test_a_frame_of_the_limit_pipes_every_later_byte_to_aiohttp() -> None:
    splitter, handler, seen = setup(limit=200)
    move, large, later = frame(b"m1"), frame(b"x" * 200), frame(b"m2")
    splitter.data_received(move + large[:10])
    splitter.data_received(large[10:] + later)
    assert [payload for payload, _ in seen] == [b"m1"]
    assert bytes(handler.got) == large + later  # the move after it is aiohttp's too


def test_nothing_is_taken_once_halted_or_the_handler_closes() -> None:
    for attribute in ("halted", "_force_close", "_close"):
        splitter, handler, seen = setup()
        target = handler if attribute.startswith("_") else splitter
        setattr(target, attribute, True)
        move = frame(b"m1")
        splitter.data_received(move)
        assert seen == [] and bytes(handler.got) == move, attribute


def test_no_hook_while_the_read_loop_is_busy_queues_the_move() -> None:
    splitter, handler, seen = setup()
    splitter.hook = None
    move = frame(b"m1")
    splitter.data_received(move)
    assert seen == [] and bytes(handler.got) == move


@given(st.binary(max_size=70_000 // 64).map(lambda b: b * 64), st.binary(min_size=4, max_size=4))
@settings(max_examples=50, deadline=None)
def test_unmask_is_the_xor_with_the_key_repeated(payload: bytes, key: bytes) -> None:
    masked = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
    assert unmask(b"ab" + key + masked, 2, len(payload)) == payload


def test_a_frames_extent_is_known_once_its_length_is_at_hand() -> None:
    for masked in (True, False):
        for size in (0, 125, 126, 65535, 65536):
            raw = b"pad" + frame(b"x" * size, masked=masked)
            length_end = 2 if size < 126 else 4 if size < 65536 else 10
            header = length_end + 4 * masked
            assert header == len(raw) - 3 - size
            for cut in range(3, 3 + length_end):
                assert frame_extent(raw, 3, cut) == (0, 0), (masked, size, cut)
            for cut in (3 + length_end, len(raw)):
                assert frame_extent(raw, 3, cut) == (header, size), (masked, size, cut)
