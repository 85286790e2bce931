-- Council ledger, revision 0021: who reviews a retraction proposal (docs/architecture.md §5 and §7).
--
-- A review is dispatched to the agent profiles that worked the thread, never a
-- simulated voter beside real ones. A thread may name its reviewers instead:
-- `agents` on its review setting (NULL: the thread's own profiles). The setting
-- stays an appended row, so who reviewed a thread's proposals, and since when,
-- is its history.
ALTER TABLE thread_review_settings ADD COLUMN agents text[]
    CONSTRAINT thread_review_settings_agents_check
    CHECK (agents IS NULL OR (cardinality(agents) BETWEEN 1 AND 16 AND array_position(agents, NULL) IS NULL));
COMMENT ON COLUMN thread_review_settings.agents IS
    'The agent profiles that review the thread''s proposals; NULL: the profiles that worked the thread';

-- When no profile qualifies to review a proposal, it stays for a manual review and
-- the event `retraction.review_unstaffed` says why (its payload names the setting
-- in force, `setting_id`). The re-verification sweep looks for that event, by
-- proposal, so it neither repeats it nor keeps the proposal in its queue until
-- the thread's review setting changes.
CREATE INDEX events_review_unstaffed_idx ON events (subject_id) WHERE kind = 'retraction.review_unstaffed';
