"""The pure TriPeaks core shared by the server and every client.

Nothing in this package touches a socket, a clock or global randomness:

* :mod:`protocol.rules`: cards, the layout, the game engine and its refusals;
* :mod:`protocol.deals`: seeded shuffles, the solver and the dealer, commitments;
* :mod:`protocol.wire`: the messages, their schema and codec, the error codes, the
  life-cycle tables, the client session and the move fast path.

Time and randomness come in as arguments.
"""

from protocol.native import guard

# Before any module of the package: a stale native build must not load (tools/native.py).
guard()
