"""The only code that touches aiohttp's internals: connections and their outboxes, frame
writing, direct reads from aiohttp's parser, the heartbeat and client addresses."""
