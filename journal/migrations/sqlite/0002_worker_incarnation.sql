-- A lease names the worker (a stable name) and the process that holds it (its
-- incarnation), so a restarted worker can take back its dead predecessor's
-- leases at once. Rows written before this column hold NULL: any incarnation.
ALTER TABLE journal_intents ADD COLUMN incarnation TEXT;
CREATE INDEX journal_intents_owner ON journal_intents (owner, state);
-- The cursor of Journal::list_page.
CREATE INDEX journal_intents_listing ON journal_intents (state, created_ms, key);
