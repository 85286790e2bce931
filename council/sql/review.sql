-- proposals_awaiting_review --
-- Open proposals no review dispatch was created for yet, whose thread reviews
-- them automatically (docs/architecture.md §5): at once (auto, or a thread that
-- never set it), or once open for the thread's delay (delayed). A manual
-- thread's proposals are never reviewed by themselves, nor one that was found to
-- have no reviewer under the setting in force (its `retraction.review_unstaffed`
-- event names that setting; a change of the setting makes it due again), nor one
-- whose review the thread's budget refused (its `retraction.review_unfunded` event
-- names the budget row in force; a change of the budget makes it due again). The
-- setting in force is the thread's latest row. Oldest first, at most :limit.
SELECT p.id, p.thread_id
FROM retraction_proposals p
LEFT JOIN LATERAL (
    SELECT s.id, s.review, s.delay_s FROM thread_review_settings s
    WHERE s.thread_id = p.thread_id
    ORDER BY s.created_at DESC, s.id DESC LIMIT 1) s ON true
WHERE p.status = 'open'
  AND NOT EXISTS (SELECT 1 FROM dispatches d WHERE d.proposal_id = p.id)
  AND coalesce(s.review, 'auto') <> 'manual'
  AND p.created_at <= now() - make_interval(secs => coalesce(s.delay_s, 0))
  AND NOT EXISTS (
      SELECT 1 FROM events e
      WHERE e.kind = 'retraction.review_unstaffed' AND e.subject_id = p.id::text
        AND e.payload ->> 'setting_id' IS NOT DISTINCT FROM s.id::text)
  AND NOT EXISTS (
      SELECT 1 FROM events e
      WHERE e.kind = 'retraction.review_unfunded' AND e.subject_id = p.id::text
        AND e.payload ->> 'budget_id' IS NOT DISTINCT FROM (
            SELECT b.id::text FROM thread_budgets b WHERE b.thread_id = p.thread_id
            ORDER BY b.created_at DESC, b.id DESC LIMIT 1))
ORDER BY p.created_at, p.id
LIMIT :limit

-- review_unstaffed_under --
-- Whether the proposal was already found to have no reviewer under this setting
-- (NULL: the default of a thread that never set one), so that concurrent sweeps
-- record it once (they run this under the proposal's lock).
SELECT EXISTS (
    SELECT 1 FROM events e
    WHERE e.kind = 'retraction.review_unstaffed' AND e.subject_id = :proposal_id
      AND e.payload ->> 'setting_id' IS NOT DISTINCT FROM CAST(:setting_id AS text))

-- thread_profiles --
-- The agent profiles that worked the thread: those pinned on its runs that
-- answered through the workers outside review, each once, in the order of its
-- first run; and whether any run of the thread that answered outside review —
-- a worker's, a recorded one, an outside agent's — was real (not simulated).
SELECT
    coalesce((
        SELECT array_agg(w.profile ORDER BY w.first_at, w.profile)
        FROM (
            SELECT r.executor ->> 'profile' AS profile, min(r.created_at) AS first_at
            FROM agent_runs r
            WHERE r.thread_id = :thread_id AND r.mode <> 'review' AND r.status = 'succeeded'
              AND r.executor IS NOT NULL
            GROUP BY 1) w), '{}') AS profiles,
    EXISTS (
        SELECT 1 FROM agent_runs r
        WHERE r.thread_id = :thread_id AND r.mode <> 'review' AND r.status = 'succeeded'
          AND NOT r.simulated) AS real

-- review_unfunded_under --
-- The thread's budget row in force (NULL: none) and whether the proposal's review was
-- already found refused under it, so that concurrent sweeps record it once (they run
-- this under the proposal's lock).
WITH budget AS (
    SELECT b.id FROM thread_budgets b WHERE b.thread_id = :thread_id
    ORDER BY b.created_at DESC, b.id DESC LIMIT 1)
SELECT (SELECT id FROM budget) AS budget_id,
       EXISTS (
           SELECT 1 FROM events e
           WHERE e.kind = 'retraction.review_unfunded' AND e.subject_id = :proposal_id
             AND e.payload ->> 'budget_id' IS NOT DISTINCT FROM (SELECT id::text FROM budget)) AS told
