"""A client written from docs/protocol.md alone hosts, joins, races to a win and verifies the deal.

Everything on the client side here uses only what the document says: raw
JSON objects and msgpack maps (no ``protocol.wire.messages``), the documented
commitment text and SHA-256, and the shuffle re-implemented from the
"Verifying a deal" section (not ``protocol.deals.shuffle``).  The host races with
the practice seed of the document's worked example and plays its winning
line on version 2 (``tripeaks.v2.json``); the second player joins over msgpack with
no subprotocol offered, which is version 1.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

import msgpack
import websockets
from websockets.typing import Subprotocol

from tests.serverutil import running_server
from tools import docgen

RANKS, SUITS = "A23456789TJQK", "CDHS"


class DocClient:
    """Speaks the wire protocol with plain dicts, as the document describes it."""

    def __init__(self, ws: Any, json_frames: bool) -> None:
        self.ws = ws
        self.json_frames = json_frames
        self.seen: list[dict[str, Any]] = []

    async def send(self, message: dict[str, Any]) -> None:
        frame = json.dumps(message) if self.json_frames else msgpack.packb(message)
        await self.ws.send(frame)

    async def until(self, tag: str) -> dict[str, Any]:
        """Read frames until one of type ``tag``; fail on any ``error``."""
        while True:
            raw = await asyncio.wait_for(self.ws.recv(), 20)
            assert isinstance(raw, str) == self.json_frames, "frame type must match subprotocol"
            message: dict[str, Any] = (
                json.loads(raw) if self.json_frames else msgpack.unpackb(raw)
            )
            self.seen.append(message)
            assert message["t"] != "error", message
            if message["t"] == tag:
                return message


def documented_shuffle(seed: str, candidate: int) -> list[str]:
    """The deck order for ``seed`` and ``candidate``, exactly as the document specifies it."""
    words: list[int] = []
    counter = 0

    def next_word() -> int:
        nonlocal counter
        if not words:
            block = hashlib.sha256(
                b"TriPeaks deal v1\x00" + seed.encode() + b"\x00"
                + candidate.to_bytes(8, "big") + counter.to_bytes(8, "big")
            ).digest()
            counter += 1
            words.extend(int.from_bytes(block[i : i + 8], "big") for i in (0, 8, 16, 24))
        return words.pop(0)

    def below(n: int) -> int:
        while True:
            x = next_word()
            if x < 2**64 - (2**64 % n):
                return x % n

    deck = [rank + suit for suit in SUITS for rank in RANKS]
    for i in range(51, 0, -1):
        j = below(i + 1)
        deck[i], deck[j] = deck[j], deck[i]
    return deck


def documented_commitment(seed: str, wrap: bool, empty_waste: bool) -> str:
    text = f"tripeaks-commit-v1\nseed={seed}\nwrap={int(wrap)}\nempty_waste={int(empty_waste)}"
    return hashlib.sha256(text.encode()).hexdigest()


async def until_everyone_else_is_ready(host: DocClient, host_id: str) -> None:
    while True:
        members = (await host.until("room_state"))["members"]
        if all(member["ready"] for member in members if member["player_id"] != host_id):
            return


def apply_result(board: list[str | None], result: dict[str, Any]) -> None:
    """The "Keeping the board" rules for an accepted play or draw."""
    if result["action"] == "play":
        board[result["position"]] = None
        for entry in result["uncovered"]:
            board[entry["position"]] = entry["card"]


async def test_a_client_following_the_document_hosts_races_wins_and_verifies(tmp_path: Any) -> None:
    seed, line = docgen.EXAMPLE_SEED, docgen.EXAMPLE_SOLUTION
    async with (
        running_server(tmp_path) as server,
        websockets.connect(server.ws_url, subprotocols=[Subprotocol("tripeaks.v2.json")]) as ann_ws,
        websockets.connect(server.ws_url) as bob_ws,
    ):
        assert ann_ws.subprotocol == "tripeaks.v2.json"
        ann, bob = DocClient(ann_ws, json_frames=True), DocClient(bob_ws, json_frames=False)

        # Host: hello, then a practice room dealt from the worked example's seed.
        await ann.send({"t": "hello", "name": "Ann", "version": 2})
        ann_id = (await ann.until("welcome"))["player_id"]
        options = {"name": "Doc race", "practice_seed": seed, "countdown_s": 0, "undo": "off"}
        await ann.send({"t": "create_room", "options": options})
        code = (await ann.until("room_state"))["code"]

        # Join over msgpack of version 1 (what no subprotocol offered means), get ready.
        await bob.send({"t": "hello", "name": "Bob", "version": 1, "bot": True})
        bob_id = (await bob.until("welcome"))["player_id"]
        await bob.send({"t": "join", "code": code})
        state = await bob.until("room_state")
        assert [member["player_id"] for member in state["members"]] == [ann_id, bob_id]
        await bob.send({"t": "ready", "ready": True})
        await until_everyone_else_is_ready(ann, ann_id)

        # Race: Ann plays the documented winning line; Bob resigns.
        await ann.send({"t": "start"})
        start = await ann.until("race_start")
        await bob.until("race_start")
        await bob.send({"t": "resign"})
        board: list[str | None] = list(start["view"]["board"])
        result: dict[str, Any] = {}
        for seq, move in enumerate(line, start=1):
            if move == "draw":
                await ann.send({"t": "move", "seq": seq, "action": "draw"})
            else:
                await ann.send({"t": "move", "seq": seq, "action": "play", "position": move})
            result = await ann.until("move_result")
            assert (result["seq"], result["accepted"]) == (seq, True), result
            apply_result(board, result)
        assert result["status"] == "won" and board == [None] * 28
        finish = await ann.until("finish")
        assert (finish["player_id"], finish["rank"]) == (ann_id, 1)
        over = await ann.until("race_over")

    # Verify, as the document says: commitment, deal, winning line, standings.
    assert over["seed"] == seed and over["practice"] is True
    assert over["commitment"] == start["commitment"]
    assert documented_commitment(seed, over["wrap"], over["empty_waste"]) == start["commitment"]
    deck = documented_shuffle(seed, over["candidate"])
    assert over["deal"] == {"peaks": deck[:28], "waste": deck[28], "stock": deck[29:]}
    for position, card in enumerate(start["view"]["board"]):
        assert card in ("??", deck[position])
    assert over["solution"][-1] in range(28) and over["par"] is not None
    standings = [(s["player_id"], s["rank"], s["status"]) for s in over["standings"]]
    assert standings == [(ann_id, 1, "finished"), (bob_id, 2, "resigned")]
