"""The pure race core: rooms and races as reducers, ``(state, input) -> outputs``.

No I/O, no clock, no randomness: time and fresh values come in as arguments,
and what must happen (send, set a timer, deal, store) goes out as
:mod:`server.race.outputs` for the hub to carry out."""
