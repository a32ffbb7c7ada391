-- Version 1: races, their players, and every player's move log.
-- Portable SQL: the same file runs on SQLite and PostgreSQL.
-- Deal, solution and options are JSON text (read whole, never filtered on);
-- moves get their own table so that logs stay queryable row by row.

CREATE TABLE races (
    race_id        TEXT PRIMARY KEY,
    room_code      TEXT NOT NULL,
    room_name      TEXT NOT NULL,
    options_json   TEXT NOT NULL,
    practice       BOOLEAN NOT NULL,
    seed           TEXT NOT NULL,
    commitment     TEXT NOT NULL,
    wrap           BOOLEAN NOT NULL,
    empty_waste    BOOLEAN NOT NULL,
    candidate      INTEGER NOT NULL,
    peaks_json     TEXT NOT NULL,
    waste          TEXT,
    stock_json     TEXT NOT NULL,
    solution_json  TEXT NOT NULL,
    par            INTEGER,
    started_at_ms  BIGINT NOT NULL,
    ended_at_ms    BIGINT NOT NULL
);

-- Newest first is the only listing order.
CREATE INDEX races_started_idx ON races (started_at_ms, race_id);

CREATE TABLE race_players (
    race_id     TEXT NOT NULL REFERENCES races (race_id) ON DELETE CASCADE,
    player_id   TEXT NOT NULL,
    name        TEXT NOT NULL,
    is_bot      BOOLEAN NOT NULL,
    rank        INTEGER NOT NULL,
    status      TEXT NOT NULL,
    finish_ms   BIGINT,
    cleared     INTEGER NOT NULL,
    moves       INTEGER NOT NULL,
    draws       INTEGER NOT NULL,
    undos       INTEGER NOT NULL,
    penalty_ms  BIGINT NOT NULL,
    PRIMARY KEY (race_id, player_id)
);

-- The player filter of GET /api/races?player=NAME.
CREATE INDEX race_players_name_idx ON race_players (name, race_id);

CREATE TABLE race_moves (
    race_id    TEXT NOT NULL,
    player_id  TEXT NOT NULL,
    idx        INTEGER NOT NULL,
    seq        INTEGER NOT NULL,
    at_ms      BIGINT NOT NULL,
    action     TEXT NOT NULL,
    position   INTEGER,
    accepted   BOOLEAN NOT NULL,
    reason     INTEGER,
    card       TEXT,
    PRIMARY KEY (race_id, player_id, idx),
    FOREIGN KEY (race_id, player_id)
        REFERENCES race_players (race_id, player_id) ON DELETE CASCADE
);
