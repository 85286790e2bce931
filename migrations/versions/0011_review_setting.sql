-- Council ledger, revision 0011: governance by hand (docs/architecture.md §5).
--
-- Whether an opened retraction proposal is reviewed automatically, after a
-- delay, or only by hand is a thread setting. A setting is a row appended here
-- (never edited): the thread's current setting is its latest row, a thread
-- without one reviews automatically, and the rows are its history — who
-- changed it, when and why.
--   auto     the re-verification pass dispatches a review at once, and the
--            review's last run adjudicates;
--   delayed  the same, once the proposal has been open for delay_s seconds;
--   manual   no review is dispatched and nothing adjudicates by itself: people
--            vote and run `council retraction adjudicate`.
CREATE TABLE thread_review_settings (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    thread_id uuid NOT NULL REFERENCES threads (id),
    review text NOT NULL CHECK (review IN ('auto', 'manual', 'delayed')),
    delay_s integer NOT NULL DEFAULT 0
        CHECK (delay_s >= 0 AND (review = 'delayed') = (delay_s > 0)),
    reason text NOT NULL DEFAULT '',
    actor text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
COMMENT ON TABLE thread_review_settings IS
    'How a thread''s opened retraction proposals are reviewed (auto, delayed, manual); the latest row is in force';
CREATE INDEX thread_review_settings_thread_idx ON thread_review_settings (thread_id, created_at);
CREATE TRIGGER thread_review_settings_immutable BEFORE UPDATE OR DELETE ON thread_review_settings
    FOR EACH ROW EXECUTE FUNCTION council_refuse_mutation_v1();
CREATE TRIGGER thread_review_settings_no_truncate BEFORE TRUNCATE ON thread_review_settings
    FOR EACH STATEMENT EXECUTE FUNCTION council_refuse_mutation_v1();

-- The application appends settings (council_app, revision 0007).
GRANT SELECT, INSERT ON thread_review_settings TO council_app;
