-- The write path maintains only the indexes it needs. A state change cannot be
-- a heap-only (HOT) update while any index names `state` (the claims' index
-- must), so every index costs an entry on each write-ahead, claim and result
-- that matches it; the ones below were paid by every write for readers that
-- need less. The listing's index (`state, created_ms, key`) stays: it is what
-- makes a page of a rare state's rows (the unknown ones to reconcile) cheap in
-- a long history.
--
-- One index of the open rows in the order a claim takes them (due time or
-- lease end, then age) replaces one per open state and the owner's: a
-- write-ahead or an enqueue adds one entry, not two, and a claim walks it in
-- order and stops at its limit instead of sorting every due row. Leases held
-- under a worker's own name are among the open rows (as many as are being
-- sent). The claim and the backlog name the open states as the predicate
-- does, so their generic plans use it.
DROP INDEX IF EXISTS journal_intents_unknown_due;
DROP INDEX IF EXISTS journal_intents_queued_due;
DROP INDEX IF EXISTS journal_intents_in_flight_lease;
DROP INDEX IF EXISTS journal_intents_in_flight_owner;
CREATE INDEX journal_intents_open
    ON journal_intents (COALESCE(due_at_ms, lease_until_ms), created_ms)
    WHERE state IN ('queued', 'in_flight', 'unknown');
-- Only results wait for an acknowledgement: an open row (every write-ahead,
-- every enqueue) no longer gets an entry here. The states are written out as
-- the page's statement writes them, so its generic plan matches.
DROP INDEX IF EXISTS journal_intents_unacknowledged;
CREATE INDEX journal_intents_unacknowledged ON journal_intents (updated_ms, key)
    WHERE acknowledged_ms IS NULL AND state IN ('succeeded', 'failed', 'abandoned');
