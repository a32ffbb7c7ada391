"""The only code that touches aiohttp's internals: connections and their outboxes, frame
writing, reads cut into frames and moves taken before aiohttp's queue, the heartbeat and
client addresses."""
