"""``tripeaks play | host | join | watch | bot | daily``: the terminal client's subcommands.

Textual is imported only by the full-screen commands, so ``tripeaks bot``
and ``--plain`` start fast and work where Textual cannot draw.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import replace
from typing import Any, Final

from client_cli.daily import DAILY_OPTIONS, add_daily_parser, ghost_refs
from client_cli.names import BadName, choose_name
from client_cli.net import DEFAULT_SERVER, ClientError, http_base, normalise_url
from client_cli.strategy import STRATEGY_CHOICES
from protocol.wire import messages as m


def add_parsers(subparsers: Any) -> None:
    """Register the client's subcommands on the ``tripeaks`` parser."""
    play = subparsers.add_parser("play", help="play in the full-screen terminal app")
    _common(play)
    play.set_defaults(func=_play, start="home", code=None)

    host = subparsers.add_parser("host", help="create a room and go to its lobby")
    _common(host)
    _room_options(host)
    host.set_defaults(func=_play, start="host", code=None)

    join = subparsers.add_parser("join", help="join a room by its code")
    join.add_argument("code", help="the room code, e.g. K7MXQ2")
    _common(join)
    join.set_defaults(func=_play, start="join")

    watch = subparsers.add_parser("watch", help="watch a room's race by its code")
    watch.add_argument("code", help="the room code")
    _common(watch)
    watch.set_defaults(func=_play, start="watch")

    bot = subparsers.add_parser(
        "bot", help="run bot players", description="Run N bot players in one room."
    )
    bot.add_argument("--server", default=DEFAULT_SERVER, help="server URL (default %(default)s)")
    where = bot.add_mutually_exclusive_group(required=True)
    where.add_argument("--room", metavar="CODE", help="join the room with this code")
    where.add_argument("--host", action="store_true", help="create a room, print its code")
    where.add_argument("--daily", action="store_true",
                       help="play today's daily deal once, solo (ranked with the bots, apart "
                            "from people, when the name is claimed)")
    bot.add_argument("--count", type=_positive_int, default=1, help="bots (default 1)")
    bot.add_argument("--pace", type=float, default=DEMO_PACE, metavar="MOVES_PER_S",
                     help="moves per second per bot, about a person's pace by default "
                          "(%(default)s); 0: as fast as the server answers")
    bot.add_argument("--strategy", choices=STRATEGY_CHOICES, default="mixed",
                     help="greedy, lookahead, or mixed: the bots take turns (default)")
    bot.add_argument("--min-players", type=_positive_int, default=None,
                     help="with --host: seats to fill before starting (default: max(2, count))")
    bot.add_argument("--lobby", type=float, default=DEMO_LOBBY_S, metavar="SECONDS",
                     help="with --host: how long the lobby stays open for people to join before "
                          "the bots start without them (default %(default)s; sooner once "
                          "everyone who joined is ready)")
    bot.add_argument("--wait-for", type=int, default=0, metavar="PEOPLE",
                     help="with --host: do not start before this many people have joined")
    bot.add_argument("--races", type=_positive_int, default=DEMO_RACES,
                     help="races to play; the bots ask for each rematch (default %(default)s)")
    bot.add_argument("--private", action="store_true",
                     help="with --host: keep the room off the public list (public by default)")
    bot.add_argument("--seed-bots", type=int, default=None, metavar="N",
                     help="seed the bots' own randomness, to repeat a run")
    bot.add_argument("--name", default="bot", help="name prefix (default %(default)s)")
    _room_options(bot)
    bot.set_defaults(func=_bot)
    add_daily_parser(subparsers, _play)


#: ``tripeaks bot`` defaults that make a room a person can race or watch.
DEMO_PACE: Final = 1.5
DEMO_LOBBY_S: Final = 30.0
DEMO_RACES: Final = 10


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--server", default=DEFAULT_SERVER, help="server URL (default %(default)s)")
    parser.add_argument(
        "--name", default=None,
        help="your name for this run (default: the name saved on the first run, else your "
             "login name)",
    )
    parser.add_argument("--plain", action="store_true",
                        help="line-based mode for pipes, screen readers and CI")


def _room_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("room options (when creating a room)")
    group.add_argument("--room-name", default=None, help="the room's name")
    group.add_argument("--public", action="store_true", help="list the room publicly")
    group.add_argument("--max-players", type=int, default=None)
    group.add_argument("--seed", default=None, help="practice seed (the race is marked practice)")
    group.add_argument("--undo", choices=[p.value for p in m.UndoPolicy], default=None)
    group.add_argument("--undo-penalty", type=int, default=None, metavar="SECONDS")
    group.add_argument("--no-wrap", action="store_true", help="king and ace are not adjacent")
    group.add_argument("--empty-waste", action="store_true", help="start with an empty waste")
    group.add_argument("--countdown", type=int, default=None, metavar="SECONDS")
    group.add_argument("--time-limit", type=int, default=None, metavar="SECONDS")
    group.add_argument("--difficulty", choices=["any", "easy", "medium", "hard"], default=None)
    group.add_argument("--no-spectators", action="store_true")
    group.add_argument("--spectator-delay", type=int, default=None, metavar="SECONDS")
    group.add_argument("--ghost", action="append", default=None, metavar="RACE_ID[:PLAYER_ID]",
                       help="race this stored run as a ghost (a bare race id: its winner's "
                            "run); up to 3, all of one deal")


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def room_options_from(args: argparse.Namespace) -> m.RoomOptions:
    """Room options from the command line, defaults for anything not given."""
    daily: m.RoomOptions | None = getattr(args, "daily_options", None)
    if daily is not None:
        return daily
    values: dict[str, Any] = {}
    pairs = {
        "room_name": "name", "max_players": "max_players", "seed": "practice_seed",
        "undo_penalty": "undo_penalty_s", "countdown": "countdown_s",
        "time_limit": "time_limit_s", "difficulty": "difficulty",
        "spectator_delay": "spectator_delay_s",
    }
    for arg, option in pairs.items():
        value = getattr(args, arg, None)
        if value is not None:
            values[option] = value
    if getattr(args, "undo", None):
        values["undo"] = m.UndoPolicy(args.undo)
    if getattr(args, "public", False):
        values["public"] = True
    if getattr(args, "no_wrap", False):
        values["wrap"] = False
    if getattr(args, "empty_waste", False):
        values["empty_waste"] = True
    if getattr(args, "no_spectators", False):
        values["allow_spectators"] = False
    if getattr(args, "ghost", None):
        values["ghosts"] = ghost_refs(args.server, args.ghost)
    return m.RoomOptions(**values)


def _play(args: argparse.Namespace) -> int:
    try:
        url = normalise_url(args.server)
        choice = choose_name(args.name)
    except (ClientError, BadName) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.plain:
        from client_cli.plain import run_plain

        if choice.warning:
            print(f"warning: {choice.warning}", flush=True)
        try:
            create = room_options_from(args) if args.start == "host" else None
        except ClientError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        return asyncio.run(run_plain(
            url, choice.name, first=_first_commands(args), create=create,
            name_note=choice.explained(),
        ))
    from client_cli.tui.app import TriPeaksApp

    try:
        options = room_options_from(args) if args.start == "host" else None
    except ClientError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    app = TriPeaksApp(url, choice.name, start=args.start, code=args.code, options=options,
                      ask_name=choice.ask, warning=choice.warning)
    status = app.run()
    return int(status or 0)


def host_banner(args: argparse.Namespace, code: str) -> str:
    """What ``tripeaks bot --host`` prints once its room is open: how to join and watch."""
    web = http_base(args.server)
    if args.wait_for:
        when = f"the race starts once {args.wait_for} person(s) joined and everyone is ready"
    else:
        when = (f"the bots start in {args.lobby:g} s, or as soon as everyone who joined is "
                "ready")
    return (f"room code: {code}\n"
            f"  race them:  tripeaks join {code} --server {args.server}\n"
            f"  watch:      {web}/watch/{code}\n"
            f"  {when}; {args.races} race(s), the bots ask for every rematch")


def _first_commands(args: argparse.Namespace) -> list[str]:
    if args.start == "join":
        return [f"join {args.code}"]
    if args.start == "watch":
        return [f"watch {args.code}"]
    return []


def _bot(args: argparse.Namespace) -> int:
    from client_cli.bot import BotSettings, run_bots

    if args.pace < 0 or args.lobby < 0 or args.wait_for < 0:
        print("error: --pace, --lobby and --wait-for cannot be negative", file=sys.stderr)
        return 2
    options = None
    if args.daily and args.count != 1:
        print("error: with --daily each bot plays its own attempt: use --count 1",
              file=sys.stderr)
        return 2
    try:
        if args.host:
            options = room_options_from(args)
            options = replace(options, public=not args.private)
    except ClientError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.daily:
        options = replace(DAILY_OPTIONS, countdown_s=0)

    def report(name: str, event: str, detail: str) -> None:
        if event == "joined" and args.host and name == f"{args.name}1":
            print(host_banner(args, detail), flush=True)
        elif event in ("start", "error"):
            print(f"{name}: {event} {detail}", flush=True)

    settings = BotSettings(
        name_prefix=args.name, on_event=report,
        seed=args.seed_bots, lobby_s=args.lobby if args.host else 0.0,
        wait_for=args.wait_for, races=1 if args.daily else args.races,
        min_players=1 if args.daily else args.min_players,
    )
    try:
        results = asyncio.run(
            run_bots(
                args.server, args.count, room=args.room, host=args.host or args.daily,
                pace=args.pace or None, strategy=args.strategy, options=options,
                settings=settings,
            )
        )
    except (ValueError, ClientError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if results.race_over is not None:
        from client_cli.results import standing_lines, summary_lines

        for line in standing_lines(results.race_over):
            print(line)
        for line in summary_lines(results.race_over):
            print(line)
    if not results.ok:
        reasons = results.errors or ["the race did not end"]
        print("the race could not be completed: " + "; ".join(reasons), file=sys.stderr)
        return 1
    return 0
