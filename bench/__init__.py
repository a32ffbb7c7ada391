"""The benchmarks (``make bench``); their load generator is compiled with the server."""

from protocol.native import guard

# Before any module of the package: a stale native build must not load (tools/native.py).
guard()
