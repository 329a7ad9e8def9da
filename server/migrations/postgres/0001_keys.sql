-- 1: as SQLite's first version; `generation` comes from a sequence so a key's
-- claims never repeat one, even after the row was released or pruned.
-- Each file moves the schema one version up; never edit one, add the next.
CREATE SEQUENCE idempotency_generation;
CREATE TABLE idempotency_keys (
    scope       BYTEA    PRIMARY KEY,
    fingerprint BYTEA    NOT NULL,
    generation  BIGINT   NOT NULL,
    expires_at  BIGINT   NOT NULL,
    reclaimed   BOOLEAN  NOT NULL DEFAULT false,
    completed   BOOLEAN  NOT NULL DEFAULT false,
    status      INTEGER,
    headers     BYTEA,
    body        BYTEA,
    not_stored  TEXT
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
