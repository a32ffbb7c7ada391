"""What each message and field means, for the generated part of docs/protocol.md.

Types, ranges and defaults come from the schema itself (:mod:`tools.docgen`);
this module holds only the prose, keyed by class and field name.  A test
checks that every field of every message has a note here.
"""

from __future__ import annotations

from typing import Final

from protocol.deals.dealer import PAR_RANGES, Difficulty
from protocol.wire.errors import CloseCode, ErrorCode
from protocol.wire.messages import OPEN_BOARDS_MIN_DELAY_S


def par_range(difficulty: Difficulty) -> str:
    """A difficulty's par range in words, from the dealer's own table."""
    low, high = PAR_RANGES[difficulty]
    if low is None:
        return "any" if high is None else f"{high} or less"
    return f"{low} or more" if high is None else f"{low} to {high}"


def _par_ranges() -> str:
    levels = (Difficulty.EASY, Difficulty.MEDIUM, Difficulty.HARD)
    return ", ".join(f"{level.value} {par_range(level)}" for level in levels)

#: One paragraph per message or nested structure, keyed by class name.
SUMMARIES: Final[dict[str, str]] = {
    # client -> server
    "Hello": "First frame on every connection. Names the player and the protocol version; "
    "with a `token` from an earlier `welcome` it resumes that player's session (and seat). "
    "Answered by `welcome`; an unsupported version gets error 21 and close 4000.",
    "CreateRoom": "Open a new room with these options; the sender becomes its host and first "
    "player. Answered by `room_state` (which carries the room code). All options may be left "
    "out.",
    "Join": "Take a seat in a room (`role` `player`, in the lobby or between races, "
    "`finished`) or watch it (`spectator`, any phase). Answered by `room_state`, or an "
    "error: 106 no such room, 107 full, 108 no spectators, 102 race already running "
    "(countdown or racing), 118 the host kicked you and the room's next race has not "
    "started yet. A name a member of the room already has is shown with a number after it "
    "(a second `root` sits as `root (2)`).",
    "Leave": "Leave the current room. Answered by `left`. Leaving a race counts as status "
    "`left` in the standings.",
    "Ready": "Set your ready flag in the lobby (`ready: false` to take it back). The host can "
    "start once every other player is ready.",
    "Start": "Host only, lobby only: deal and start the countdown. Refused with 112 while a "
    "player is not ready.",
    "Kick": "Host only, lobby or finished: remove a player from the room. They get `left` with "
    "reason `kicked`, and their `join` as a player is refused with 118 until the room's next "
    "race has started (they may still watch).",
    "UpdateOptions": "Host only, in the lobby or between races (finished): replace the room "
    "options. Every player's ready flag (or rematch request) is cleared.",
    "MoveRequest": "One move in the race. `seq` is 1 for the first move of each race and goes up "
    "by one per move (rejected ones included). Resending a number already answered returns "
    "the original `move_result` again and changes nothing; skipping ahead is refused with "
    "error 113.",
    "Resign": "Give up the race; your status becomes `resigned`.",
    "Rematch": "In the finished phase: ask for another race in this room (shown as your ready "
    "flag). When every seated player has asked, a new deal is dealt and the countdown starts; "
    "a player who leaves without asking no longer holds the others back.",
    "Ping": "Clock probe. Answered at once by `pong`.",
    "ListRooms": "Ask for the public rooms. Answered by `room_list`.",
    "Sync": "Ask for a fresh `room_state` and, for a player, `resync` (for example after a "
    "gap in `room_state.version`). A spectator gets `room_state` and the catch-up instead "
    "(see \"Spectating\"), never `resync`.",
    # server -> client
    "Welcome": "Answer to `hello`. Keep `token` secret: it is the only key to this seat.",
    "RoomState": "The room as it is now, sent to every member whenever it changes. `version` "
    "goes up by one with each change; a client that sees a gap sends `sync`.",
    "Countdown": "The deal is ready; the race is planned to start at `start_at_ms` (server "
    "clock). `race_start` follows when the server's countdown timer fires, usually a "
    "millisecond or two after `start_at_ms`; the race clock counts from "
    "`race_start.started_at_ms`, not from `start_at_ms`. With `countdown_s` 0 no "
    "`countdown` is sent.",
    "RaceStart": "The race has started: your view of the deal and the commitment to its seed. "
    "`started_at_ms` is the race clock's zero: every `elapsed_ms` and `time_ms` of this race "
    "counts from it.",
    "MoveResult": "The answer to one `move`, to its sender only. Fields by case:\n\n"
    "- accepted `play`: `position` and `card` are the card played; `uncovered` lists the cards "
    "the play turned face up (at most two).\n"
    "- accepted `draw`: `card` is the drawn card (now the waste top); `position` is null.\n"
    "- accepted `undo`: `undone` says what was taken back, `\"play\"` or `\"draw\"` (never "
    "`\"undo\"`: an undo takes back a play or a draw, not another undo). For a play, "
    "`position` and `card` are the card put back and `hidden` the positions that went face "
    "down again; for a draw, "
    "`position` and `card` are null (the card goes back on the stock).\n"
    "- rejected: `accepted` false, `reason` is the rules' reason code (table below); "
    "`position` echoes the request, nothing changed.\n\n"
    "The counters and `status` always describe the game after the answer.",
    "Progress": "Everyone's progress, sent to players and spectators at most `progress_hz` "
    "times per second per room (server setting, 4 by default). Each frame lists every "
    "player. The race's end keeps this bound: a race that ends sooner than "
    "`1 / progress_hz` after the last `progress` gets no final one, and `race_over`'s "
    "standings are the final lines.",
    "Finish": "A player has cleared all 28 cards. `time_ms` includes undo penalties.",
    "RaceOver": "The race has ended. Reveals the seed, the full deal and a winning line, so "
    "any client can check the commitment and recompute the deal (see \"Verifying a deal\"). "
    "Sent only once the result is stored, or with `saved: false` when it could not be yet "
    "(see \"Results not yet stored\").",
    "SpectatorBoard": "To spectators only: one player's board as that player sees it, with "
    "the face of every card that some racer still racing has not seen shown as `\"??\"` "
    "(unless the room has `open_boards`), sent `spectator_delay_s` seconds late (see "
    "\"Spectating\").",
    "SpectatorUpdate": "To spectators whose `hello` had `spectator_update: true`, instead of "
    "`progress` and `spectator_board`: the `progress` and the `spectator_board`s made at one "
    "moment, in one frame, with the same contents, hiding and delay as those frames (see "
    "\"Spectating\").",
    "Resync": "To players only, after a reconnect or a `sync`: where the race stands for "
    "this connection. Always sent right after a `room_state`.",
    "Error": "A refused frame or request. Nothing changed on the server.",
    "Pong": "Answer to `ping`. Round trip = now − `client_time_ms`; clock offset ≈ "
    "`server_time_ms` − (`client_time_ms` + round trip / 2).",
    "RoomList": "Answer to `list_rooms`: the public rooms, at most 100.",
    "Left": "You are no longer in room `code`.",
    "Closing": "Sent just before the server closes the connection with close code `code`.",
    "Moved": "Cluster mode only: the room (for a `join`) or the seat (for a `hello` with a "
    "token) lives on another node. Nothing changed here. Open a new connection to `url`, say "
    "`hello` with your token there and send `ref` again (see \"More than one node\").",
    # nested
    "RoomOptions": "Everything the host chooses. Every field has a default and may be left "
    "out.",
    "Member": "A seated player. Spectators are only counted.",
    "GhostRef": "A stored run to race as a ghost: one player's run of one stored race.",
    "RoomSummary": "One line of `room_list`.",
    "BoardView": "One player's view of their game. `board[p]` is the card at position `p` "
    "(card code), `\"??\"` while face down, or null once played.",
    "Uncovered": "A card turned face up by a play.",
    "PlayerProgress": "One player's line in `progress`.",
    "Standing": "One player's line in the final standings, in rank order.",
    "DealCodes": "A full deal as card codes.",
}

#: One short note per field, keyed by (class name, field name).
FIELDS: Final[dict[tuple[str, str], str]] = {
    ("Hello", "name"): "display name",
    ("Hello", "version"): "protocol version the client speaks: the one its subprotocol names "
    "(this document describes version 2; see Versioning)",
    ("Hello", "token"): "reconnect token from an earlier `welcome`, to resume",
    ("Hello", "bot"): "true for programs; bots are labelled as such to everyone",
    ("Hello", "client"): "client software name and version, for logs",
    ("Hello", "key"): "the secret key of a claimed name (docs/players.md): with it, a name "
    "nobody has claimed becomes yours; a claimed name needs its key. Never shown to anyone",
    ("Hello", "spectator_update"): "while spectating, get `spectator_update` frames instead "
    "of separate `progress` and `spectator_board` frames (see \"Spectating\")",
    ("CreateRoom", "options"): "the room's options",
    ("Join", "code"): "room code (as shown by `room_state.code`)",
    ("Join", "role"): "join to race or to watch",
    ("Ready", "ready"): "true: ready; false: not ready",
    ("Kick", "player_id"): "the player to remove",
    ("UpdateOptions", "options"): "the new options, all of them",
    ("MoveRequest", "seq"): "this move's sequence number (1, 2, 3, ... per race)",
    ("MoveRequest", "action"): "what to do",
    ("MoveRequest", "position"): "for `play`, the position (0..27) to play; "
    "null or absent otherwise. 28..255 is well formed and rejected by the rules (reason 7)",
    ("Ping", "client_time_ms"): "the client's clock, integer milliseconds",
    ("Welcome", "player_id"): "your player id",
    ("Welcome", "name"): "your name as others see it",
    ("Welcome", "token"): "reconnect token: send it in `hello` to resume",
    ("Welcome", "resumed"): "true when `hello.token` restored an existing session",
    ("Welcome", "protocol_version"): "the protocol version in use (the hello's)",
    ("Welcome", "server_version"): "server software version",
    ("RoomState", "version"): "room version, +1 per change",
    ("RoomState", "code"): "room code; others join with it",
    ("RoomState", "phase"): "the room's phase (see the life-cycle table)",
    ("RoomState", "host_id"): "player id of the host",
    ("RoomState", "options"): "current options",
    ("RoomState", "members"): "seated players, in joining order",
    ("RoomState", "spectators"): "how many spectators watch",
    ("RoomState", "your_role"): "your role in this room",
    ("RoomState", "race_id"): "the current or last race, if any",
    ("Countdown", "seconds"): "countdown length",
    ("Countdown", "start_at_ms"): "planned start: when the countdown ends (server clock, unix "
    "ms); the race clock's zero is `race_start.started_at_ms`, a little later",
    ("Countdown", "server_time_ms"): "server clock when this frame was made (unix ms)",
    ("RaceStart", "race_id"): "this race's id (also in `race_over`)",
    ("RaceStart", "practice"): "dealt from a chosen seed (results flagged practice)",
    ("RaceStart", "wrap"): "rule: King and Ace adjacent",
    ("RaceStart", "empty_waste"): "rule: the waste starts empty",
    ("RaceStart", "commitment"): "SHA-256 commitment to the seed (see \"Seed commitment\")",
    ("RaceStart", "view"): "your starting view",
    ("RaceStart", "started_at_ms"): "the race clock's zero: when the race actually started "
    "(server clock, unix ms); use this, not `countdown.start_at_ms`",
    ("RaceStart", "server_time_ms"): "server clock when this frame was made (unix ms)",
    ("MoveResult", "seq"): "the move's `seq`",
    ("MoveResult", "action"): "the move's action",
    ("MoveResult", "accepted"): "true when the move was applied",
    ("MoveResult", "reason"): "why it was rejected (`Reason` table); null when accepted",
    ("MoveResult", "position"): "see the cases above",
    ("MoveResult", "card"): "see the cases above",
    ("MoveResult", "uncovered"): "cards turned face up by this play",
    ("MoveResult", "hidden"): "positions turned face down by this undo",
    ("MoveResult", "undone"): "for an accepted undo: what was undone; null otherwise",
    ("MoveResult", "waste_top"): "waste top card now (null: empty waste)",
    ("MoveResult", "stock_left"): "cards left in the stock",
    ("MoveResult", "cleared"): "peak cards played",
    ("MoveResult", "moves"): "plays and draws made (undone ones included)",
    ("MoveResult", "draws"): "draws made",
    ("MoveResult", "undos"): "undos made",
    ("MoveResult", "status"): "your game: `playing`, `won` or `stuck`",
    ("MoveResult", "penalty_ms"): "undo penalty added to your time so far",
    ("MoveResult", "elapsed_ms"): "race time when the move was handled",
    ("Progress", "elapsed_ms"): "race time of this frame",
    ("Progress", "players"): "every player's progress",
    ("Finish", "player_id"): "who finished",
    ("Finish", "name"): "their name",
    ("Finish", "rank"): "finishing place so far",
    ("Finish", "time_ms"): "finish time: race time of the winning move plus penalties",
    ("Finish", "moves"): "moves made",
    ("Finish", "undos"): "undos made",
    ("RaceOver", "race_id"): "id of the stored race (`GET /api/races/{id}`)",
    ("RaceOver", "ended_by"): "why the race ended",
    ("RaceOver", "standings"): "final standings in rank order",
    ("RaceOver", "seed"): "the seed, revealed (null in a daily attempt until its day is over)",
    ("RaceOver", "candidate"): "which shuffle candidate of the seed was dealt (docs/deals.md); "
    "null with `seed`",
    ("RaceOver", "wrap"): "rule: King and Ace adjacent",
    ("RaceOver", "empty_waste"): "rule: the waste started empty",
    ("RaceOver", "difficulty"): "difficulty the deal was chosen for",
    ("RaceOver", "practice"): "dealt from a chosen seed, or raced against ghosts",
    ("RaceOver", "commitment"): "the commitment sent in `race_start`",
    ("RaceOver", "deal"): "the full deal (null with `seed`)",
    ("RaceOver", "solution"): "a winning line: positions to play and `\"draw\"`s, in order "
    "(null with `seed`)",
    ("RaceOver", "par"): "fewest draws any win needs (null: not computed, or a daily attempt)",
    ("RaceOver", "saved"): (
        "the result is stored; false: not yet (a second `race_over` with true follows)"
    ),
    ("RaceOver", "daily"): "the UTC day (`YYYY-MM-DD`) of a daily attempt: its seed, deal and "
    "line come from `GET /api/daily/{day}` once that day is over (see \"The daily deal\")",
    ("SpectatorBoard", "player_id"): "whose board",
    ("SpectatorBoard", "view"): "their view",
    ("SpectatorBoard", "elapsed_ms"): "race time of this view",
    ("SpectatorUpdate", "progress"): "the `progress` of this moment without its `\"t\"` "
    "(null: none was due)",
    ("SpectatorUpdate", "boards"): "the `spectator_board`s of this moment without their "
    "`\"t\"`, in the order they would have been sent",
    ("Resync", "room_version"): "the `room_state.version` this matches",
    ("Resync", "phase"): "the room's phase",
    ("Resync", "race_id"): "the current or last race",
    ("Resync", "commitment"): "the race's seed commitment",
    ("Resync", "started_at_ms"): "the race clock's zero, as in `race_start` (unix ms)",
    ("Resync", "server_time_ms"): "server clock now (unix ms)",
    ("Resync", "elapsed_ms"): "race time now (or at the end)",
    ("Resync", "last_seq"): "last move `seq` answered (0: none); send `last_seq + 1` next",
    ("Resync", "penalty_ms"): "your undo penalty so far",
    ("Resync", "view"): "your full current view (null when not racing in this race)",
    ("Error", "code"): "`ErrorCode` (table below)",
    ("Error", "message"): "human-readable explanation",
    ("Error", "ref"): "type of the refused message, when known",
    ("Error", "seq"): "`seq` of the refused move, when there was one",
    ("Pong", "client_time_ms"): "echo of `ping.client_time_ms`",
    ("Pong", "server_time_ms"): "server clock when answering (unix ms)",
    ("RoomList", "rooms"): "public rooms",
    ("Left", "code"): "the room left",
    ("Left", "reason"): "you left, were kicked, or the room closed",
    ("Closing", "code"): "the close code that follows",
    ("Closing", "reason"): "human-readable reason",
    ("Moved", "url"): "the node to connect to: `ws://` or `wss://` URL, or a path on the "
    "address you used",
    ("Moved", "ref"): "the message to send again there: `hello` or `join`",
    ("Moved", "code"): "the room that lives there, when known",
    ("RoomOptions", "name"): "room name shown in lists",
    ("RoomOptions", "public"): "listed in `room_list` and `GET /api/rooms`",
    ("RoomOptions", "max_players"): "seats",
    ("RoomOptions", "allow_spectators"): "whether spectators may join",
    ("RoomOptions", "spectator_delay_s"): "how late spectators see boards",
    ("RoomOptions", "open_boards"): "spectators see every card face as the players do "
    f"(needs `spectator_delay_s` ≥ {OPEN_BOARDS_MIN_DELAY_S}); false: a face only once "
    "every racer still racing has seen it",
    ("RoomOptions", "wrap"): "King and Ace are adjacent",
    ("RoomOptions", "empty_waste"): "the waste starts empty (24-card stock)",
    ("RoomOptions", "undo"): "undo off, free, or with a time penalty",
    ("RoomOptions", "undo_penalty_s"): "seconds added per undo when `undo` is `penalty`",
    ("RoomOptions", "countdown_s"): "countdown before the race (0: none)",
    ("RoomOptions", "time_limit_s"): "race time limit (0: none)",
    ("RoomOptions", "difficulty"): f"par range of the deal: {_par_ranges()} (see \"Verifying a "
    "deal\")",
    ("RoomOptions", "practice_seed"): "deal from this seed; races are flagged practice",
    ("RoomOptions", "daily"): "a solo attempt at today's daily deal: every other option but "
    "`name` and `countdown_s` keeps its default (see \"The daily deal\")",
    ("RoomOptions", "ghosts"): "stored runs to race, replayed at their recorded times on "
    "their deal; races are flagged practice (see \"Ghost races\")",
    ("GhostRef", "race_id"): "a stored race (`GET /api/races/{id}`)",
    ("GhostRef", "player_id"): "whose run in it",
    ("Member", "player_id"): "player id",
    ("Member", "name"): "display name",
    ("Member", "bot"): "a program",
    ("Member", "ready"): "ready flag (lobby), or asked for a rematch (finished)",
    ("Member", "connected"): "false while the player is disconnected (seat kept)",
    ("Member", "guest"): "true unless the player proved a claimed name with its key "
    "(docs/players.md); bots are guests unless they claimed one",
    ("Member", "ghost"): "a stored run the server replays (player id `ghost-1`, ...), not a "
    "person: show it marked as a ghost",
    ("RoomSummary", "code"): "room code",
    ("RoomSummary", "phase"): "the room's phase",
    ("RoomSummary", "players"): "seated players",
    ("RoomSummary", "spectators"): "spectators",
    ("RoomSummary", "options"): "the room's options",
    ("BoardView", "board"): "28 entries by position: card code, `\"??\"` or null",
    ("BoardView", "waste_top"): "waste top (null: empty; `\"??\"` only in `spectator_board`)",
    ("BoardView", "stock_left"): "cards in the stock",
    ("BoardView", "moves"): "plays and draws made",
    ("BoardView", "draws"): "draws made",
    ("BoardView", "undos"): "undos made",
    ("BoardView", "status"): "`playing`, `won` or `stuck`",
    ("Uncovered", "position"): "position turned face up",
    ("Uncovered", "card"): "the card there",
    ("PlayerProgress", "player_id"): "player id",
    ("PlayerProgress", "cleared"): "peak cards played",
    ("PlayerProgress", "stock_left"): "cards left in the stock",
    ("PlayerProgress", "moves"): "moves made",
    ("PlayerProgress", "undos"): "undos made",
    ("PlayerProgress", "status"): "race status",
    ("PlayerProgress", "elapsed_ms"): "their time: finish time when finished, else race time",
    ("PlayerProgress", "connected"): "false while disconnected",
    ("Standing", "player_id"): "player id",
    ("Standing", "name"): "name",
    ("Standing", "bot"): "a program",
    ("Standing", "rank"): "1 is first",
    ("Standing", "status"): "final status",
    ("Standing", "time_ms"): "finishers: finish time (with penalties). Others: the race time "
    "of their last accepted play or undo, when their final `cleared` count was set (0 when "
    "they made none); resigning, leaving or the time limit does not change it",
    ("Standing", "cleared"): "peak cards played",
    ("Standing", "moves"): "moves made",
    ("Standing", "undos"): "undos made",
    ("Standing", "penalty_ms"): "undo penalties included in `time_ms`",
    ("Standing", "ghost"): "a stored run the server replayed, not a person",
    ("DealCodes", "peaks"): "cards at positions 0..27",
    ("DealCodes", "waste"): "starting waste card (null with `empty_waste`)",
    ("DealCodes", "stock"): "the stock, `stock[0]` drawn first (23 cards, 24 with `empty_waste`)",
}

#: What the error table adds to an error's words (``ERROR_TEXT``, which also goes on the
#: wire as the ``message``): when this server sends the code, or that it never does.
ERROR_NOTES: Final[dict[ErrorCode, str]] = {
    ErrorCode.WRONG_FRAME_TYPE: "answered like any other bad frame: the connection stays "
    "open (no close 1003), and the frame counts towards the ten that close it with 4004",
    ErrorCode.NOT_ENOUGH_PLAYERS: "reserved, never sent by this server: a host alone may "
    "start a solo race",
    ErrorCode.ALREADY_RACING: "never sent by this server: a player still seated in the room "
    "gets 104, and one who left a running race is out of it and may watch it at once",
    ErrorCode.NAME_CLAIMED: "answers a `hello` without `key` (and without a `token` that "
    "resumes a session) whose name, compared after NFKC and case folding, someone claimed; "
    "the connection stays open for another `hello`",
    ErrorCode.WRONG_KEY: "answers a `hello` whose `key` does not match the claimed name; "
    "it counts as a guess",
    ErrorCode.TOO_MANY_GUESSES: "answers a `hello` with a `key` for a claimed name after 5 "
    "wrong keys for that name, or 10 from the address, within 60 s: the key is not even "
    "checked until the window has passed",
    ErrorCode.DAILY_PLAYED: "answers `start` in a daily attempt's room when the claimed name "
    "has started an attempt at today's deal before (on any connection); the room is back in "
    "its lobby",
    ErrorCode.DAILY_SOLO: "answers `join` (as player or spectator), `update_options` and "
    "`rematch` in a daily attempt's room",
    ErrorCode.GHOST_UNAVAILABLE: "answers `start` when a named run cannot be raced (no such "
    "race or player, a daily attempt whose day is not over, runs of different deals); the "
    "room is back in its lobby",
    ErrorCode.DAILY_UNAVAILABLE: "answers `start` in a daily attempt's room when the store "
    "cannot register the attempt; nothing was counted, try again",
    ErrorCode.KICKED: "answers `join` with role `player` from someone the host kicked from "
    "this room, matched by player id (a resumed session keeps it) and by name, ignoring "
    "case; the bar lifts when the room's next race starts. Watching is not barred",
}

#: Error codes no server module raises at all (a test scans the server for them).
RESERVED_ERRORS: Final = frozenset({ErrorCode.NOT_ENOUGH_PLAYERS})

#: What the close-code table adds to a close code's words.
CLOSE_NOTES: Final[dict[CloseCode, str]] = {
    CloseCode.UNSUPPORTED_DATA: "never sent by this server: a frame of the wrong type gets "
    "error 3 and the connection stays open",
    CloseCode.NO_SUBPROTOCOL: "never sent by this server: an offer of only unknown "
    "subprotocols is refused before the upgrade, with HTTP 400 (see Connecting)",
}

#: Measured share of winnable deals per difficulty, wrap on and wrap off (docs/deals.md).
DIFFICULTY_SHARES: Final[dict[Difficulty, tuple[str, str]]] = {
    Difficulty.ANY: ("100%", "100%"),
    Difficulty.EASY: ("28%", "6%"),
    Difficulty.MEDIUM: ("39%", "26%"),
    Difficulty.HARD: ("33%", "68%"),
}
