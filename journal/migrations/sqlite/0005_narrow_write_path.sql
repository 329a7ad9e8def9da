-- The write path maintains only the indexes it needs: SQLite rewrites an index
-- entry on every update that changes one of its columns, and every state
-- change changes `state`. The listing's index (`state, created_ms, key`)
-- stays: it is what makes a page of a rare state's rows (the unknown ones to
-- reconcile) cheap in a long history.
--
-- Leases held under a worker's own name are found among the in-flight rows
-- (`journal_intents_due`, whose first column is the state): an index of their
-- own cost an entry on every write-ahead, claim and result.
DROP INDEX IF EXISTS journal_intents_owner;
-- Only results wait for an acknowledgement: an open row (every write-ahead,
-- every enqueue) no longer gets an entry here. The states are written out: the
-- page's statement names them the same way, so the planner can use the index.
DROP INDEX IF EXISTS journal_intents_unacknowledged;
CREATE INDEX journal_intents_unacknowledged ON journal_intents (updated_ms, key)
    WHERE acknowledged_ms IS NULL AND state IN ('succeeded', 'failed', 'abandoned');
