-- An outbox enqueue writes an intent as `queued` inside the caller's own
-- transaction: nothing is sent until it commits and a relay claims it. SQLite
-- cannot change a CHECK constraint in place: the table is rebuilt (the
-- documented procedure), its rows and indexes kept.
CREATE TABLE journal_intents_next (
    key              TEXT PRIMARY KEY NOT NULL,
    key_on_wire      INTEGER NOT NULL,
    method           TEXT NOT NULL,
    url              TEXT NOT NULL,
    headers          BLOB NOT NULL,
    body             BLOB NOT NULL,
    deadline_ms      INTEGER,
    retention_end_ms INTEGER NOT NULL,
    state            TEXT NOT NULL
        CHECK (state IN ('queued', 'in_flight', 'succeeded', 'failed', 'unknown', 'abandoned')),
    owner            TEXT,
    lease_until_ms   INTEGER,
    fence            INTEGER NOT NULL,
    runs             INTEGER NOT NULL,
    due_at_ms        INTEGER,
    status           INTEGER,
    locator          TEXT,
    detail           TEXT,
    created_ms       INTEGER NOT NULL,
    updated_ms       INTEGER NOT NULL,
    incarnation      TEXT
);
INSERT INTO journal_intents_next (key, key_on_wire, method, url, headers, body, deadline_ms,
    retention_end_ms, state, owner, lease_until_ms, fence, runs, due_at_ms, status, locator,
    detail, created_ms, updated_ms, incarnation)
SELECT key, key_on_wire, method, url, headers, body, deadline_ms,
    retention_end_ms, state, owner, lease_until_ms, fence, runs, due_at_ms, status, locator,
    detail, created_ms, updated_ms, incarnation
FROM journal_intents;
DROP TABLE journal_intents;
ALTER TABLE journal_intents_next RENAME TO journal_intents;
CREATE INDEX journal_intents_due ON journal_intents (state, due_at_ms, lease_until_ms);
CREATE INDEX journal_intents_owner ON journal_intents (owner, state);
CREATE INDEX journal_intents_listing ON journal_intents (state, created_ms, key);
