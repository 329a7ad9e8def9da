-- A terminal result is delivered to the application until it acknowledges it
-- (Journal::acknowledge, or the acknowledge in the application's own
-- transaction). NULL: not acknowledged yet.
ALTER TABLE journal_intents ADD COLUMN acknowledged_ms INTEGER;
-- Results recorded before this version had no acknowledgement to give: they
-- count as delivered, so the first catch-up after the upgrade does not hand the
-- application every result it ever had again.
UPDATE journal_intents SET acknowledged_ms = updated_ms
    WHERE state IN ('succeeded', 'failed', 'abandoned');
-- Journal::unacknowledged, oldest first. Acknowledged rows (the history) are
-- not in it; open rows are (the backlog, bounded) and skipped by the query. The
-- predicate names no state, so a statement that binds its states still
-- matches it.
CREATE INDEX journal_intents_unacknowledged
    ON journal_intents (updated_ms, key) WHERE acknowledged_ms IS NULL;
