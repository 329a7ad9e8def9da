-- The journal as it was before versioned migrations. IF NOT EXISTS adopts a
-- journal created by those versions (no version table, the table present).
CREATE TABLE IF NOT EXISTS journal_intents (
    key              TEXT PRIMARY KEY,
    key_on_wire      BOOLEAN NOT NULL,
    method           TEXT NOT NULL,
    url              TEXT NOT NULL,
    headers          BYTEA NOT NULL,
    body             BYTEA NOT NULL,
    deadline_ms      BIGINT,
    retention_end_ms BIGINT NOT NULL,
    state            TEXT NOT NULL
        CHECK (state IN ('in_flight', 'succeeded', 'failed', 'unknown', 'abandoned')),
    owner            TEXT,
    lease_until_ms   BIGINT,
    fence            BIGINT NOT NULL,
    runs             BIGINT NOT NULL,
    due_at_ms        BIGINT,
    status           INTEGER,
    locator          TEXT,
    detail           TEXT,
    created_ms       BIGINT NOT NULL,
    updated_ms       BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS journal_intents_unknown_due
    ON journal_intents (due_at_ms) WHERE state = 'unknown';
CREATE INDEX IF NOT EXISTS journal_intents_in_flight_lease
    ON journal_intents (lease_until_ms) WHERE state = 'in_flight';
