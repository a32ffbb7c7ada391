"""A room driven by hand on a simulated clock, for tests of what its frames say."""

from __future__ import annotations

from protocol.deals.dealer import deal_for_seed
from protocol.rules.game import DRAW, Move, Rules
from protocol.wire import messages as m
from server.race.outputs import DealRequest, Output, Send, ToPlayers
from server.race.room import Room
from server.race.room_types import Fresh, Identity, RoomTimings

DEALT = deal_for_seed("42", Rules())
UNDO: str = "undo"


class Driver:
    """A room on seed 42 with ``players`` seated (``p0`` hosts); :meth:`start` begins."""

    def __init__(self, players: int, **options: object) -> None:
        opts = m.RoomOptions(practice_seed="42", **options)  # type: ignore[arg-type]
        self.room = Room("ABCDEF", opts, Identity("p0", "ann"), 0, RoomTimings())
        self.frames: list[Output] = []
        self.seq = {f"p{n}": 0 for n in range(players)}
        for n in range(1, players):
            self.room.join(Identity(f"p{n}", f"player{n}"), m.Role.PLAYER, 0)
            self.room.set_ready(f"p{n}", True)

    def start(self, now_ms: int = 0) -> list[Output]:
        """The host starts and the deal is ready at once; the outputs that follow."""
        outputs: list[Output] = []
        for out in self.room.start("p0", now_ms, Fresh("unused", "race1")):
            if isinstance(out, DealRequest):
                outputs += self.room.deal_ready(out.ticket, DEALT, now_ms)
            else:
                outputs.append(out)
        self.frames += outputs
        return outputs

    def feed(self, outputs: list[Output]) -> None:
        self.frames += outputs

    def move(self, pid: str, move: Move | str, at: int) -> m.MoveResult:
        """``pid`` plays a position, draws, or undoes (:data:`UNDO`); the answer."""
        self.seq[pid] += 1
        if move == UNDO:
            request = m.MoveRequest(self.seq[pid], m.MoveAction.UNDO)
        elif move == DRAW:
            request = m.MoveRequest(self.seq[pid], m.MoveAction.DRAW)
        else:
            assert isinstance(move, int)
            request = m.MoveRequest(self.seq[pid], m.MoveAction.PLAY, move)
        outputs = self.room.move(pid, request, at)
        self.feed(outputs)
        answer = outputs[0]
        assert isinstance(answer, Send) and isinstance(answer.message, m.MoveResult)
        return answer.message

    def sent(self, kind: type[m.ServerMessage]) -> list[m.ServerMessage]:
        """Every message of ``kind`` sent to all players so far."""
        return [
            f.message for f in self.frames
            if isinstance(f, ToPlayers) and isinstance(f.message, kind)
        ]

    def standings(self) -> dict[str, m.Standing]:
        (over,) = self.sent(m.RaceOver)
        assert isinstance(over, m.RaceOver)
        return {s.player_id: s for s in over.standings}


def racing(players: int, **options: object) -> Driver:
    """A :class:`Driver` whose race has started at 0 (no countdown)."""
    driver = Driver(players, countdown_s=0, **options)
    driver.start()
    assert driver.room.phase is m.Phase.RACING
    return driver
