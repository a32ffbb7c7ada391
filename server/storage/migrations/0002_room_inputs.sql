-- Version 2: every room's input log (server/storage/inputlog.py), kept until the
-- room closes so that a restarted server can rebuild its rooms from it.
-- input_json is one encoded input (server/recovery/codec.py); reconnect tokens
-- appear in it only as SHA-256 digests.

CREATE TABLE room_inputs (
    room_code   TEXT NOT NULL,
    idx         INTEGER NOT NULL,
    epoch       BIGINT NOT NULL,
    input_json  TEXT NOT NULL,
    PRIMARY KEY (room_code, idx)
);
