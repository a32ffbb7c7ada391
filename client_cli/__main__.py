"""``tripeaks`` command line: each subcommand lives in its own module.

A module registers its subcommands through ``add_parsers(subparsers)`` and
sets ``func`` on each parser; ``func(args)`` returns the exit status.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

#: Modules that contribute subcommands, imported in this order.
COMMAND_MODULES = ("client_cli.deal_commands", "client_cli.commands")


def build_parser() -> argparse.ArgumentParser:
    """The full ``tripeaks`` argument parser."""
    parser = argparse.ArgumentParser(prog="tripeaks", description="TriPeaks Race tools")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        module = importlib.import_module(name)
        module.add_parsers(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tripeaks`` console script."""
    args = build_parser().parse_args(argv)
    try:
        status: int = args.func(args)
    except KeyboardInterrupt:
        return 130
    return status


if __name__ == "__main__":
    sys.exit(main())
