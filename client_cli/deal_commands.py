"""``tripeaks deal``, ``tripeaks solve`` and ``tripeaks stats``: the deal tools.

``deal`` prints the deal for a seed (a picture of the three peaks, or one
JSON object), ``solve`` decides any deal read as JSON (one object, or JSON
Lines), and ``stats`` decides many random shuffles and reports the winnable
share with a 95% Wilson interval.  The JSON formats are in docs/deals.md.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import secrets
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from protocol.deals.dealer import DealtGame, Difficulty, deal_for_seed
from protocol.deals.shuffle import SeedError, candidate_deal, check_seed
from protocol.deals.solver import SolveResult, solve
from protocol.rules.cards import CardError, card_code
from protocol.rules.game import Deal, Rules
from protocol.rules.layout import PEAK_CARDS

#: Column of each peak position in the picture, two characters per card.
_PICTURE_ROWS: tuple[tuple[int, ...], ...] = (
    (0, 1, 2),
    (3, 4, 5, 6, 7, 8),
    tuple(range(9, 18)),
    tuple(range(18, 28)),
)
_ROW_ONE_K = (0, 1, 3, 4, 6, 7)  # left covering row-2 card of each row-1 card


def _column(position: int) -> int:
    if position >= 18:
        return 2 + 4 * (position - 18)
    if position >= 9:
        return 4 + 4 * (position - 9)
    if position >= 3:
        return 6 + 4 * _ROW_ONE_K[position - 3]
    return 8 + 12 * position


class DealFormatError(ValueError):
    """A deal object that is not valid JSON or not a valid 52-card deal."""


# ---- registration ---------------------------------------------------------


def add_parsers(subparsers: Any) -> None:
    """Register ``deal``, ``solve`` and ``stats`` on the ``tripeaks`` parser."""
    deal = subparsers.add_parser(
        "deal", help="print the winnable deal for a seed", description=_deal_command.__doc__
    )
    deal.add_argument("seed", help="1 to 64 printable characters; an integer is its decimal text")
    _add_rule_flags(deal)
    deal.add_argument(
        "--difficulty",
        choices=[d.value for d in Difficulty],
        default=Difficulty.ANY.value,
        help="ask for a par range (see docs/deals.md)",
    )
    deal.add_argument("--json", action="store_true", help="print one JSON object")
    deal.set_defaults(func=_deal_command)

    solver = subparsers.add_parser(
        "solve", help="decide deals read as JSON on stdin", description=_solve_command.__doc__
    )
    solver.add_argument("--par", action="store_true", help="also compute par (fewest draws)")
    solver.set_defaults(func=_solve_command)

    stats = subparsers.add_parser(
        "stats", help="winnable share of random shuffles", description=_stats_command.__doc__
    )
    stats.add_argument("--deals", type=_positive, required=True, help="how many shuffles")
    _add_rule_flags(stats)
    stats.add_argument("--seed", help="seed prefix, to repeat a run (default: random)")
    stats.add_argument(
        "--jobs", type=_positive, default=os.cpu_count() or 1, help="worker processes"
    )
    stats.add_argument("--json", action="store_true", help="print the figures as JSON")
    stats.set_defaults(func=_stats_command)


def _add_rule_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-wrap", action="store_true", help="King and Ace are not adjacent")
    parser.add_argument(
        "--empty-waste", action="store_true", help="start with an empty waste (24-card stock)"
    )


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _rules(args: argparse.Namespace) -> Rules:
    return Rules(wrap=not args.no_wrap, empty_waste=args.empty_waste)


# ---- tripeaks deal --------------------------------------------------------


def _deal_command(args: argparse.Namespace) -> int:
    """Print the deal for a seed with its winning line and par."""
    try:
        seed = check_seed(args.seed)
    except SeedError as error:
        print(f"tripeaks deal: {error}", file=sys.stderr)
        return 2
    dealt = deal_for_seed(seed, _rules(args), Difficulty(args.difficulty))
    text = json.dumps(dealt_to_object(dealt)) if args.json else render_dealt(dealt)
    return _print_or_quiet(text)


def _print_or_quiet(text: str) -> int:
    """Print ``text``; a reader that went away early (``| head``) is not an error."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        # Point stdout at /dev/null so the interpreter's final flush is quiet too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 0


def dealt_to_object(dealt: DealtGame) -> dict[str, Any]:
    """The JSON object ``tripeaks deal --json`` prints."""
    return {
        "seed": dealt.seed,
        "rules": {"wrap": dealt.rules.wrap, "empty_waste": dealt.rules.empty_waste},
        "candidate": dealt.candidate,
        **dealt.deal.codes(),
        "solution": list(dealt.solution),
        "par": dealt.par,
    }


def render_peaks(deal: Deal) -> str:
    """The 28 peak cards drawn as three peaks over the shared bottom row."""
    lines = []
    for row in _PICTURE_ROWS:
        line = ""
        for position in row:
            line = line.ljust(_column(position)) + card_code(deal.peaks[position])
        lines.append(line)
    return "\n".join(lines)


def render_dealt(dealt: DealtGame) -> str:
    """A human-readable page: rules, the peaks, waste, stock and the winning line."""
    rules = dealt.rules
    wrap = "wrap on" if rules.wrap else "wrap off"
    start = "empty-waste start" if rules.empty_waste else "standard start"
    par = "?" if dealt.par is None else str(dealt.par)
    deal = dealt.deal
    waste = "(empty)" if deal.waste is None else card_code(deal.waste)
    return "\n".join(
        [
            f"Seed {dealt.seed!r}: {wrap}, {start}, difficulty {dealt.difficulty.value}, "
            f"candidate {dealt.candidate}, par {par}",
            "",
            render_peaks(deal),
            "",
            f"Waste: {waste}",
            f"Stock ({len(deal.stock)}, next drawn first): "
            + " ".join(card_code(c) for c in deal.stock),
            f"Winning line ({len(dealt.solution)} moves; a number plays that position):",
            _wrap_words([str(m) for m in dealt.solution], 78),
        ]
    )


def _wrap_words(words: list[str], width: int) -> str:
    lines: list[str] = []
    line = " "
    for word in words:
        if len(line) + 1 + len(word) > width:
            lines.append(line)
            line = " "
        line += " " + word
    lines.append(line)
    return "\n".join(lines)


# ---- tripeaks solve -------------------------------------------------------


def _solve_command(args: argparse.Namespace) -> int:
    """Decide deals read on stdin: one JSON object, or JSON Lines (one deal a line).

    Prints one line per deal; a malformed deal gets an error line (and a
    message on stderr) and the exit status is then 1.
    """
    try:
        return solve_stream(sys.stdin, sys.stdout, sys.stderr, want_par=args.par)
    except BrokenPipeError:
        return _print_or_quiet("")


def solve_stream(source: TextIO, out: TextIO, err: TextIO, *, want_par: bool) -> int:
    """Solve every deal in ``source``; see :func:`_solve_command`."""
    status = 0
    count = 0
    for where, item in _read_deals(source.read()):
        count += 1
        try:
            deal = deal_from_object(item)
        except DealFormatError as error:
            print(f"tripeaks solve: {where}: {error}", file=err)
            print(json.dumps({"error": f"{where}: {error}"}), file=out)
            status = 1
            continue
        print(json.dumps(result_to_object(solve(deal, want_par=want_par))), file=out)
        out.flush()
    if count == 0:
        print("tripeaks solve: no deal on stdin", file=err)
        return 1
    return status


def result_to_object(result: SolveResult) -> dict[str, Any]:
    """The JSON object ``tripeaks solve`` prints for one deal."""
    return {
        "winnable": result.winnable,
        "solution": None if result.solution is None else list(result.solution),
        "par": result.par,
        "nodes": result.nodes,
    }


def _read_deals(text: str) -> Iterator[tuple[str, Any]]:
    """``(where, parsed object or _BadJson)`` for one JSON document or each JSON line."""
    try:
        yield "deal 1", json.loads(text)
        return
    except json.JSONDecodeError as error:
        whole_text_error = error
    parsed: list[tuple[str, Any]] = []
    for line_number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            parsed.append((f"line {line_number}", json.loads(line)))
        except json.JSONDecodeError as error:
            parsed.append((f"line {line_number}", _BadJson(str(error))))
    if not text.strip():
        return
    if all(isinstance(item, _BadJson) for _, item in parsed):
        # Not JSON Lines either: report the document as a whole, once.
        yield "stdin", _BadJson(str(whole_text_error))
        return
    yield from parsed


@dataclass(frozen=True)
class _BadJson:
    message: str


def deal_from_object(item: Any) -> Deal:
    """A :class:`Deal` from a deal object; raises :class:`DealFormatError`."""
    if isinstance(item, _BadJson):
        raise DealFormatError(f"not valid JSON ({item.message})")
    if not isinstance(item, dict):
        raise DealFormatError("a deal is a JSON object with peaks, waste and stock")
    rules = _rules_from_object(item.get("rules", {}))
    peaks = _codes(item, "peaks")
    if len(peaks) != PEAK_CARDS:
        raise DealFormatError(f"peaks must hold {PEAK_CARDS} cards, got {len(peaks)}")
    stock = _codes(item, "stock")
    waste = item.get("waste")
    if waste is not None and not isinstance(waste, str):
        raise DealFormatError("waste must be a card code or null")
    try:
        return Deal.from_codes(rules, peaks, waste, stock)
    except CardError as error:
        raise DealFormatError(str(error)) from None


def _rules_from_object(rules: Any) -> Rules:
    if not isinstance(rules, dict):
        raise DealFormatError('rules must be an object like {"wrap": true, "empty_waste": false}')
    unknown = sorted(set(rules) - {"wrap", "empty_waste"})
    if unknown:
        raise DealFormatError(f"unknown rule options: {', '.join(unknown)}")
    values = {"wrap": rules.get("wrap", True), "empty_waste": rules.get("empty_waste", False)}
    for name, value in values.items():
        if not isinstance(value, bool):
            raise DealFormatError(f"rules.{name} must be true or false")
    return Rules(wrap=values["wrap"], empty_waste=values["empty_waste"])


def _codes(item: dict[str, Any], key: str) -> list[str]:
    value = item.get(key)
    if not isinstance(value, list) or not all(isinstance(code, str) for code in value):
        raise DealFormatError(f"{key} must be a list of card codes")
    return value


# ---- tripeaks stats -------------------------------------------------------


def wilson_interval(wins: int, total: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval for a share ``wins / total`` (95% by default)."""
    if total <= 0:
        raise ValueError("no trials")
    share = wins / total
    scale = 1 + z * z / total
    centre = (share + z * z / (2 * total)) / scale
    half = z * math.sqrt(share * (1 - share) / total + z * z / (4 * total * total)) / scale
    return max(0.0, centre - half), min(1.0, centre + half)


def _decide(job: tuple[str, Rules]) -> bool:
    """Worker: is candidate 0 of this seed winnable?"""
    seed, rules = job
    return solve(candidate_deal(seed, 0, rules)).winnable


def _stats_command(args: argparse.Namespace) -> int:
    """Decide N random shuffles exactly; print the winnable share and its 95% interval.

    Shuffle ``i`` is candidate 0 of seed ``PREFIX-i``; the prefix is random
    unless ``--seed`` gives it.  A progress bar runs on stderr.
    """
    rules = _rules(args)
    prefix = args.seed if args.seed is not None else secrets.token_hex(6)
    try:
        check_seed(f"{prefix}-{args.deals}")
    except SeedError as error:
        print(f"tripeaks stats: bad --seed: {error}", file=sys.stderr)
        return 2
    jobs = [(f"{prefix}-{i}", rules) for i in range(args.deals)]
    wins = 0
    with _progress() as progress:
        task = progress.add_task("deciding", total=len(jobs))
        for won in _run(jobs, min(args.jobs, len(jobs))):
            wins += won
            progress.advance(task)
    low, high = wilson_interval(wins, len(jobs))
    if args.json:
        figures = {
            "deals": len(jobs),
            "winnable": wins,
            "share": wins / len(jobs),
            "interval95": [low, high],
            "rules": {"wrap": rules.wrap, "empty_waste": rules.empty_waste},
            "seed_prefix": prefix,
        }
        print(json.dumps(figures))
    else:
        print(
            f"winnable: {wins} of {len(jobs)} = {100 * wins / len(jobs):.1f}% "
            f"(95% interval {100 * low:.1f}% to {100 * high:.1f}%, Wilson); "
            f"seed prefix {prefix!r}"
        )
    return 0


def _run(jobs: list[tuple[str, Rules]], workers: int) -> Iterator[bool]:
    if workers <= 1:
        yield from map(_decide, jobs)
        return
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        yield from pool.imap_unordered(_decide, jobs, chunksize=4)


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=False,
    )
