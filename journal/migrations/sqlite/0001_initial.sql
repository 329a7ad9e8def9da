-- The journal as it was before versioned migrations. IF NOT EXISTS adopts a
-- journal created by those versions (user_version 0 with the table present).
CREATE TABLE IF NOT EXISTS journal_intents (
    key              TEXT PRIMARY KEY NOT NULL,
    key_on_wire      INTEGER NOT NULL,
    method           TEXT NOT NULL,
    url              TEXT NOT NULL,
    headers          BLOB NOT NULL,
    body             BLOB NOT NULL,
    deadline_ms      INTEGER,
    retention_end_ms INTEGER NOT NULL,
    state            TEXT NOT NULL
        CHECK (state IN ('in_flight', 'succeeded', 'failed', 'unknown', 'abandoned')),
    owner            TEXT,
    lease_until_ms   INTEGER,
    fence            INTEGER NOT NULL,
    runs             INTEGER NOT NULL,
    due_at_ms        INTEGER,
    status           INTEGER,
    locator          TEXT,
    detail           TEXT,
    created_ms       INTEGER NOT NULL,
    updated_ms       INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS journal_intents_due
    ON journal_intents (state, due_at_ms, lease_until_ms);
