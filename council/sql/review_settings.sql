-- add_review_setting --
-- Append a thread's review setting: the latest row is the one in force.
INSERT INTO thread_review_settings (thread_id, review, delay_s, agents, reason, actor)
VALUES (:thread_id, :review, :delay_s, CAST(:agents AS text[]), :reason, :actor)
RETURNING id, thread_id, review, delay_s, agents, reason, actor, created_at

-- review_settings --
-- A thread's review settings, oldest first (the last is in force).
SELECT id, thread_id, review, delay_s, agents, reason, actor, created_at
FROM thread_review_settings WHERE thread_id = :thread_id
ORDER BY created_at, id

-- review_setting_in_force --
-- A thread's latest review setting, if it has one (none: the default).
SELECT id, thread_id, review, delay_s, agents, reason, actor, created_at
FROM thread_review_settings WHERE thread_id = :thread_id
ORDER BY created_at DESC, id DESC
LIMIT 1

-- proposal_dispatched --
-- Whether a review dispatch of the proposal exists (read under the proposal's lock).
SELECT id FROM dispatches WHERE proposal_id = :proposal_id LIMIT 1
