"""``tripeaks deal``, ``tripeaks solve`` and ``tripeaks stats`` (filled in by the solver work)."""

from __future__ import annotations

import argparse
from typing import Any


def add_parsers(subparsers: Any) -> None:
    """Register the deal tools on the ``tripeaks`` parser."""
    parser: argparse.ArgumentParser = subparsers.add_parser("deal", help="print a deal")
    parser.add_argument("seed")
    parser.set_defaults(func=_not_ready)


def _not_ready(args: argparse.Namespace) -> int:
    print("not implemented yet")
    return 1
