"""``tripeaks`` command line: each subcommand lives in its own module.

A module registers its subcommands through ``add_parsers(subparsers)`` and
sets ``func`` on each parser; ``func(args)`` returns the exit status.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path

#: Modules that contribute subcommands, imported in this order.
COMMAND_MODULES = ("client_cli.deal_commands", "client_cli.commands", "client_cli.claim")

#: What a bare ``tripeaks`` runs: the full-screen client's home screen.
DEFAULT_COMMAND = "play"


def package_version() -> str:
    """The installed ``tripeaks-race`` version, else the one in a source tree's pyproject."""
    try:
        return importlib.metadata.version("tripeaks-race")
    except importlib.metadata.PackageNotFoundError:
        pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
        try:
            with pyproject.open("rb") as file:
                return str(tomllib.load(file)["project"]["version"])
        except (OSError, KeyError, tomllib.TOMLDecodeError):
            return "unknown"


def build_parser() -> argparse.ArgumentParser:
    """The full ``tripeaks`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="tripeaks",
        description=f"TriPeaks Race tools (with no command: {DEFAULT_COMMAND})",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        module = importlib.import_module(name)
        module.add_parsers(subparsers)
    return parser


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The parsed command line; no arguments at all means ``tripeaks play``."""
    words = list(sys.argv[1:] if argv is None else argv)
    return build_parser().parse_args(words or [DEFAULT_COMMAND])


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tripeaks`` console script."""
    args = parse_args(argv)
    try:
        status: int = args.func(args)
    except KeyboardInterrupt:
        return 130
    return status


if __name__ == "__main__":
    sys.exit(main())
