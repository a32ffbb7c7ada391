"""The TriPeaks Race server: aiohttp shells around the pure race core."""

from protocol.native import guard

# Before any module of the package: a stale native build must not load (tools/native.py).
guard()
