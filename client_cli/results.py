"""The end of a race in words: ranking, par, the commitment check and the winning line.

Pure functions over a ``race_over`` message, shared by the full-screen
results screen, the watch screen and the plain mode.
"""

from __future__ import annotations

from dataclasses import dataclass

from client_cli.render import card_label
from protocol.deals.commitment import verify_commitment, verify_deal
from protocol.rules.cards import CardError
from protocol.rules.game import DRAW, Deal, Game
from protocol.rules.refusals import IllegalMoveError
from protocol.wire import messages as m

STATUS_WORDS = {
    "finished": "finished",
    "stuck": "stuck",
    "resigned": "resigned",
    "left": "left",
    "timed_out": "out of time",
    "racing": "racing",
}

#: What par means, said next to it: nobody guesses it from the word.
PAR_MEANING = "the fewest draws any win of this deal needs"


def status_words(status: m.PlayerStatus, ended_by: m.RaceEnd) -> str:
    """A final standing in words; still racing when the race was cut short is unfinished."""
    if status is m.PlayerStatus.RACING and ended_by is not m.RaceEnd.ALL_DONE:
        return "unfinished"
    return STATUS_WORDS.get(status.value, status.value)


def par_text(race: m.RaceOver) -> str:
    """``par 13 draws (the fewest draws any win of this deal needs)``."""
    if race.par is None:
        return "par unknown"
    return f"par {race.par} draw{'s' if race.par != 1 else ''} ({PAR_MEANING})"


def clock(ms: int | float | None) -> str:
    """``m:ss.t`` for a race time in milliseconds; ``–`` when there is none."""
    if ms is None:
        return "–"
    tenths = int(ms) // 100
    minutes, tenths = divmod(tenths, 600)
    return f"{minutes}:{tenths // 10:02d}.{tenths % 10}"


def standing_lines(race: m.RaceOver, me: str | None = None) -> list[str]:
    """One line per player: rank, name, status, time, cleared, moves, undos."""
    header = f"{'#':>2}  {'player':<24} {'result':<11} {'time':>8} {'cleared':>7}"
    lines = [f"{header} {'moves':>5} {'undos':>5}"]
    for s in sorted(race.standings, key=lambda s: s.rank):
        name = s.name + (" (bot)" if s.bot else "") + (" (ghost)" if s.ghost else "") + (
            " ← you" if s.player_id == me else "")
        time_text = clock(s.time_ms) if s.status is m.PlayerStatus.FINISHED else "–"
        lines.append(
            f"{s.rank:>2}  {name:<24} {status_words(s.status, race.ended_by):<11} "
            f"{time_text:>8} {s.cleared:>5}/28 {s.moves:>5} {s.undos:>5}"
        )
    return lines


@dataclass(frozen=True, slots=True)
class Verification:
    """The client's own check of the revealed seed."""

    commitment_ok: bool
    deal_ok: bool
    line_ok: bool

    @property
    def ok(self) -> bool:
        """Every check passed."""
        return self.commitment_ok and self.deal_ok and self.line_ok

    @property
    def mark(self) -> str:
        """✔ or ✗."""
        return "✔" if self.ok else "✗"


def revealed_deal(race: m.RaceOver) -> Deal | None:
    """The deal ``race_over`` reveals, or ``None`` if its codes are not a valid deal (or a
    daily attempt's deal is kept back until its day is over)."""
    if race.deal is None:
        return None
    try:
        return race.deal.to_deal(race.rules)
    except (CardError, ValueError):
        return None


def verify(race: m.RaceOver, commitment_at_start: str | None = None) -> Verification:
    """Check the commitment (as sent at race start when known), the deal and the winning line."""
    digest = commitment_at_start or race.commitment
    if race.seed is None or race.candidate is None:
        return Verification(False, False, False)  # a daily attempt: checked after its day
    commitment_ok = digest == race.commitment and verify_commitment(digest, race.seed, race.rules)
    deal = revealed_deal(race)
    deal_ok = deal is not None and verify_deal(deal, race.seed, race.candidate)
    line_ok = False
    if deal is not None:
        try:
            game = Game(deal)
            for step in race.solution or ():
                game.push(step)
            line_ok = game.cleared == 28
        except (IllegalMoveError, TypeError, IndexError):
            line_ok = False
    return Verification(commitment_ok, deal_ok, line_ok)


def replay_steps(race: m.RaceOver) -> list[str]:
    """The winning line card by card, cards named as the board shows them: ``1. play 23 Q♥``."""
    deal = revealed_deal(race)
    if deal is None:
        return [hidden_text(race) if race.daily else "the revealed deal is not valid"]
    game = Game(deal)
    out = []
    for number, step in enumerate(race.solution or (), 1):
        try:
            if step == DRAW:
                out.append(f"{number:>2}. draw {card_label(game.draw())}")
            else:
                assert isinstance(step, int)
                card = card_label(deal.peaks[step])
                game.play(step)
                out.append(f"{number:>2}. play {step:>2} {card}")
        except (IllegalMoveError, AssertionError):
            out.append(f"{number:>2}. {step}: not legal here (the line is wrong)")
            break
    return out


def summary_lines(race: m.RaceOver, commitment_at_start: str | None = None) -> list[str]:
    """Par, practice flag, the revealed seed and the verdict of the checks."""
    if race.daily is not None:
        return [
            f"daily deal {race.daily}: attempt {race.race_id} ended "
            f"({race.ended_by.value.replace('_', ' ')})",
            hidden_text(race),
        ]
    check = verify(race, commitment_at_start)
    kind = "practice race" if race.practice else "race"
    return [
        f"{kind} {race.race_id} ended ({race.ended_by.value.replace('_', ' ')}); {par_text(race)}",
        f"seed: {race.seed}  candidate: {race.candidate}  "
        f"commitment {race.commitment[:16]}… {check.mark}",
        f"checks: commitment {'✔' if check.commitment_ok else '✗'}, "
        f"deal {'✔' if check.deal_ok else '✗'}, winning line {'✔' if check.line_ok else '✗'}",
    ]


def hidden_text(race: m.RaceOver) -> str:
    """What a daily attempt's results say instead of the seed and the checks."""
    return (f"the seed and the deal of {race.daily} are revealed once that day is over (UTC); "
            f"then `tripeaks daily --check {race.daily}` checks commitment {race.commitment[:16]}…")
