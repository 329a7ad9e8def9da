//! Every statement the SQLite store runs, in one place. State names are bound
//! (`:in_flight`, `:unknown`, … from `IntentState::as_str`), never written here;
//! rows are read by column name, so `SELECT *` survives added columns.

/// The rows `:owner` (in incarnation `:incarnation`) may claim at `:now`: due
/// `unknown` and `queued` rows, ended leases, and leases its own name holds
/// under another incarnation (a dead predecessor's).
macro_rules! claimable {
    () => {
        "((state IN (:unknown, :queued) AND due_at_ms <= :now)
          OR (state = :in_flight AND (lease_until_ms <= :now
              OR (owner = :owner AND incarnation IS NOT :incarnation))))"
    };
}

pub(super) const WRITE_AHEAD: &str = "
    INSERT INTO journal_intents (key, key_on_wire, method, url, headers, body, deadline_ms,
        retention_end_ms, state, owner, incarnation, lease_until_ms, fence, runs,
        created_ms, updated_ms)
    VALUES (:key, :key_on_wire, :method, :url, :headers, :body, :deadline_ms,
        :retention_end_ms, :in_flight, :owner, :incarnation, :lease_until_ms, 1, 1, :now, :now)
    ON CONFLICT (key) DO NOTHING";

pub(super) const CLAIMABLE_KEYS: &str = concat!(
    "SELECT key FROM journal_intents WHERE ",
    claimable!(),
    " ORDER BY COALESCE(due_at_ms, lease_until_ms), created_ms LIMIT :limit"
);

pub(super) const CLAIM_ONE: &str = "
    UPDATE journal_intents
    SET state = :in_flight, owner = :owner, incarnation = :incarnation,
        lease_until_ms = :lease_until_ms, fence = fence + 1, runs = runs + 1,
        due_at_ms = NULL, updated_ms = :now
    WHERE key = :key
    RETURNING *";

/// One key, when nobody may be sending it (see `JournalStore::take_over`).
pub(super) const TAKE_OVER: &str = "
    UPDATE journal_intents
    SET state = :in_flight, owner = :owner, incarnation = :incarnation,
        lease_until_ms = :lease_until_ms, fence = fence + 1, runs = runs + 1,
        due_at_ms = NULL, updated_ms = :now
    WHERE key = :key AND (state IN (:unknown, :queued)
        OR (state = :in_flight AND (lease_until_ms <= :now
            OR (owner = :owner AND incarnation IS NOT :incarnation))))
    RETURNING *";

pub(super) const RECORD: &str = "
    UPDATE journal_intents
    SET state = :state, status = COALESCE(:status, status), locator = :locator,
        detail = :detail, due_at_ms = :due_at_ms, lease_until_ms = NULL, updated_ms = :now,
        runs = runs - :runs_given_back
    WHERE key = :key AND fence = :fence AND state = :in_flight";

pub(super) const GET: &str = "SELECT * FROM journal_intents WHERE key = :key";

pub(super) const LIST: &str = "
    SELECT * FROM journal_intents
    WHERE state = :state AND (created_ms, key) > (:after_created_ms, :after_key)
    ORDER BY created_ms, key
    LIMIT :limit";

pub(super) const ABANDON: &str = "
    UPDATE journal_intents
    SET state = :abandoned, detail = :reason, fence = fence + 1,
        lease_until_ms = NULL, due_at_ms = NULL, updated_ms = :now
    WHERE key = :key AND state IN (:queued, :in_flight, :unknown)";

pub(super) const PRUNE: &str = "
    DELETE FROM journal_intents
    WHERE state IN (:succeeded, :failed, :abandoned) AND updated_ms <= :before";

pub(super) const BACKLOG: &str = concat!(
    "SELECT
        COUNT(*) FILTER (WHERE ",
    claimable!(),
    ") AS due,
        COUNT(*) FILTER (WHERE state = :in_flight AND NOT ",
    claimable!(),
    ") AS leased,
        MIN(lease_until_ms) FILTER (WHERE state = :in_flight AND NOT ",
    claimable!(),
    ") AS leased_until_ms,
        COUNT(*) FILTER (WHERE state IN (:unknown, :queued) AND due_at_ms > :now) AS waiting,
        MIN(due_at_ms) FILTER (WHERE state IN (:unknown, :queued) AND due_at_ms > :now)
            AS next_due_ms
     FROM journal_intents
     WHERE state IN (:queued, :in_flight, :unknown)"
);
