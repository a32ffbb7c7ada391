"""``tripeaks-server`` entry point (placeholder until the server lands)."""

from __future__ import annotations

import sys


def main() -> int:
    """Start the server."""
    print("tripeaks-server: not implemented yet", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
