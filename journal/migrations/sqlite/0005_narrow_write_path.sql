-- The write path maintains only the indexes it needs: SQLite rewrites an index
-- entry on every update that changes one of its columns, and every state
-- change changes `state`.
--
-- Leases held under a worker's own name are found among the in-flight rows
-- (`journal_intents_due`, whose first column is the state): an index of their
-- own cost an entry on every write-ahead, claim and result.
DROP INDEX IF EXISTS journal_intents_owner;
-- The listing's cursor walks the intents in creation order, which never
-- changes, and keeps the rows of the state asked for: no entry to move on a
-- state change, and one index for every state.
DROP INDEX IF EXISTS journal_intents_listing;
CREATE INDEX journal_intents_created ON journal_intents (created_ms, key);
-- Only results wait for an acknowledgement: an open row (every write-ahead,
-- every enqueue) no longer gets an entry here. The states are written out: the
-- page's statement names them the same way, so the planner can use the index.
DROP INDEX IF EXISTS journal_intents_unacknowledged;
CREATE INDEX journal_intents_unacknowledged ON journal_intents (updated_ms, key)
    WHERE acknowledged_ms IS NULL AND state IN ('succeeded', 'failed', 'abandoned');
