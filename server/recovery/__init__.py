"""Recovery: every room's inputs logged before their outputs go out, and rooms rebuilt
from that log after a restart (see docs/server.md, "Restarts and recovery")."""
