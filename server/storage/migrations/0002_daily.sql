-- Version 2: the daily deal: each UTC day's seed, and every attempt at it.

CREATE TABLE daily_deals (
    day            TEXT PRIMARY KEY,
    seed           TEXT NOT NULL,
    commitment     TEXT NOT NULL,
    wrap           BOOLEAN NOT NULL,
    empty_waste    BOOLEAN NOT NULL,
    created_at_ms  BIGINT NOT NULL
);

CREATE TABLE daily_attempts (
    race_id        TEXT PRIMARY KEY,
    day            TEXT NOT NULL,
    player_key     TEXT NOT NULL,
    player_id      TEXT NOT NULL,
    name           TEXT NOT NULL,
    bot            BOOLEAN NOT NULL,
    ranked         BOOLEAN NOT NULL,
    status         TEXT NOT NULL,
    finish_ms      BIGINT,
    cleared        INTEGER NOT NULL,
    moves          INTEGER NOT NULL,
    started_at_ms  BIGINT NOT NULL
);

-- A player's one attempt a day (guests' keys are unique per attempt).
CREATE UNIQUE INDEX daily_attempts_once ON daily_attempts (day, player_key);
