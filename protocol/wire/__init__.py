"""The wire protocol: messages, their schema and codec, error and close codes, the
life-cycle tables, the sans-I/O client session and the move fast path.

The only part of :mod:`protocol` that knows about bytes (msgpack and JSON)."""
