-- 1: one row per key in its scope. `expires_at` is the lease's end while the key
-- is in progress and the retention's end once it finished (milliseconds since the
-- Unix epoch). `generation` fences a lapsed holder out.
-- Each file moves the schema one version up; never edit one, add the next.
CREATE TABLE idempotency_keys (
    scope       BLOB    PRIMARY KEY,
    fingerprint BLOB    NOT NULL,
    generation  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    reclaimed   INTEGER NOT NULL DEFAULT 0,
    completed   INTEGER NOT NULL DEFAULT 0,
    status      INTEGER,
    headers     BLOB,
    body        BLOB,
    not_stored  TEXT
) WITHOUT ROWID;
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
