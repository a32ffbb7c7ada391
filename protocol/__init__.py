"""Pure TriPeaks core shared by the server and the clients.

Nothing in this package touches a socket, a clock or global randomness:
the rules engine (:mod:`protocol.game`), seeded deals (:mod:`protocol.shuffle`),
the solver and dealer, and the wire codec are plain functions over values.
"""
