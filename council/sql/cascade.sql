-- record_continuation --
-- What a cascade step cut off (JSON array :pending of [version_id, depth_left]),
-- inserted in the transaction of the step (or of the reassessment that started
-- the cascade), so the work outlives any message about it.
INSERT INTO cascade_continuations (pending, actor)
VALUES (CAST(:pending AS jsonb), :actor)
RETURNING id

-- take_continuations --
-- First statement of a cascade step: mark the given continuations continued,
-- in this step's transaction, and return what they hold. Row locks are taken
-- in id order (two steps never deadlock); a continuation another step already
-- continued is not returned (re-checked after its lock), so a duplicated or
-- swept-again message does nothing.
WITH taken AS (
    SELECT id FROM cascade_continuations
    WHERE id = ANY (CAST(:ids AS uuid[])) AND continued_at IS NULL
    ORDER BY id
    FOR UPDATE
)
UPDATE cascade_continuations c
SET continued_at = clock_timestamp()
FROM taken
WHERE c.id = taken.id
RETURNING c.id, c.pending

-- unfinished_continuations --
-- For the sweep: continuations no step continued, older than :settle_s (a
-- fresh one's message is normally on its way), oldest first, at most :limit
-- (cascade_continuations_unfinished_idx).
SELECT id FROM cascade_continuations
WHERE continued_at IS NULL AND created_at < clock_timestamp() - make_interval(secs => :settle_s)
ORDER BY created_at, id
LIMIT :limit
