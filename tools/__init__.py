"""Project tools that do not ship in the wheel: the generators of docs/protocol.md."""
