"""``tripeaks daily``: today's deal, its leaderboard, and the check once a day is over;
and ``--ghost``, which names the stored runs a room races.

``tripeaks daily`` opens a solo attempt at today's deal (``create_room`` with
``daily: true``) and starts it when you say ``start``; ``--leaderboard [DAY]``
prints a day's leaderboards; ``--check DAY`` fetches a finished day's seed and
checks it against the commitment published at the day's start, and the deal
against the seed, exactly as a race's are checked.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from client_cli.net import DEFAULT_SERVER, ClientError, fetch_json
from protocol.deals.commitment import verify_commitment, verify_deal
from protocol.rules.game import Game, Rules
from protocol.wire import messages as m

#: The daily attempt's room: solo, the default rules, started by the player.
DAILY_OPTIONS = m.RoomOptions(daily=True, countdown_s=3)


def add_daily_parser(subparsers: Any, play: Any) -> None:
    """Register ``tripeaks daily``; ``play`` runs the client on a room's options."""
    daily = subparsers.add_parser(
        "daily", help="play today's daily deal, or see a day's leaderboard",
        description="Play today's daily deal once (a claimed name is ranked; a guest plays "
                    "unranked), print a day's leaderboard, or check a finished day's deal.",
    )
    daily.add_argument("--server", default=DEFAULT_SERVER, help="server URL (default %(default)s)")
    daily.add_argument("--name", default=None, help="your name (default: your login name)")
    daily.add_argument("--plain", action="store_true", help="line-based mode")
    what = daily.add_mutually_exclusive_group()
    what.add_argument("--leaderboard", nargs="?", const="", metavar="DAY",
                      help="print the leaderboard of DAY (YYYY-MM-DD; default today)")
    what.add_argument("--check", metavar="DAY",
                      help="check a finished day's seed against its commitment, and its deal")
    daily.set_defaults(func=lambda args: run_daily(args, play), start="host", code=None)


def run_daily(args: argparse.Namespace, play: Any) -> int:
    """``tripeaks daily``: play, print the leaderboard, or check a day."""
    try:
        if args.check is not None:
            lines, ok = check_day(fetch_json(args.server, f"/api/daily/{args.check}"))
            print("\n".join(lines))
            return 0 if ok else 1
        if args.leaderboard is not None:
            day = args.leaderboard or fetch_json(args.server, "/api/daily")["day"]
            print("\n".join(leaderboard_lines(fetch_json(args.server,
                                                         f"/api/daily/{day}/leaderboard"))))
            return 0
    except (ClientError, KeyError, TypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args.daily_options = DAILY_OPTIONS
    return int(play(args))


def check_day(doc: dict[str, Any]) -> tuple[list[str], bool]:
    """Lines saying whether a day's revealed seed and deal check out, and whether they do."""
    day = doc["day"]
    if not doc.get("revealed"):
        return [f"the daily deal of {day} is not over yet; its commitment is "
                f"{doc['commitment']} (checkable after midnight UTC)"], False
    rules = Rules(wrap=bool(doc["wrap"]), empty_waste=bool(doc["empty_waste"]))
    seed, candidate = str(doc["seed"]), int(doc["candidate"])
    commitment_ok = verify_commitment(str(doc["commitment"]), seed, rules)
    deal = doc["deal"]
    try:
        codes = m.DealCodes(tuple(deal["peaks"]), deal["waste"], tuple(deal["stock"]))
        dealt = codes.to_deal(rules)
        deal_ok = verify_deal(dealt, seed, candidate)
        game = Game(dealt)
        for step in doc["solution"]:
            game.push(step)
        line_ok = game.cleared == 28
    except (ValueError, TypeError, KeyError):
        deal_ok = line_ok = False
    marks = {True: "✔", False: "✗"}
    return [
        f"daily deal {day}: seed {seed} candidate {candidate}",
        f"checks: commitment {marks[commitment_ok]}, deal {marks[deal_ok]}, "
        f"winning line {marks[line_ok]}",
    ], commitment_ok and deal_ok and line_ok


def leaderboard_lines(doc: dict[str, Any]) -> list[str]:
    """A day's two leaderboards (people, then bots) as text."""
    state = "over" if doc["revealed"] else "still open"
    lines = [f"daily deal {doc['day']} ({state}; {doc['unranked']} unranked guest attempts)"]
    for board in ("humans", "bots"):
        lines.append(f"{'people' if board == 'humans' else 'bots'}:")
        entries = doc.get(board) or []
        if not entries:
            lines.append("  nobody yet")
        for entry in entries:
            result = (f"finished in {entry['finish_ms'] / 1000:.1f} s"
                      if entry["finish_ms"] is not None else f"{entry['status']}")
            ghost = f"  race it: --ghost {entry['race_id']}:{entry['player_id']}" if (
                "race_id" in entry) else ""
            lines.append(f"  {entry['rank']:>3}. {entry['name']:<24} {result:<22} "
                         f"{entry['cleared']:>2}/28 {entry['moves']:>4} moves{ghost}")
    return lines


def ghost_refs(server: str, specs: list[str]) -> tuple[m.GhostRef, ...]:
    """``--ghost RACE_ID[:PLAYER_ID]`` values as ghost refs; a bare race id names its winner."""
    refs = []
    for spec in specs:
        race_id, _, player_id = spec.partition(":")
        if not player_id:
            race = fetch_json(server, f"/api/races/{race_id}")
            player_id = min(race["players"], key=lambda p: p["rank"])["player_id"]
        refs.append(m.GhostRef(race_id, player_id))
    return tuple(refs)
