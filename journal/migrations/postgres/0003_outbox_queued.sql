-- An outbox enqueue writes an intent as `queued` inside the caller's own
-- transaction: nothing is sent until it commits and a relay claims it.
ALTER TABLE journal_intents DROP CONSTRAINT IF EXISTS journal_intents_state_check;
ALTER TABLE journal_intents ADD CONSTRAINT journal_intents_state_check
    CHECK (state IN ('queued', 'in_flight', 'succeeded', 'failed', 'unknown', 'abandoned'));
CREATE INDEX journal_intents_queued_due
    ON journal_intents (due_at_ms) WHERE state = 'queued';
