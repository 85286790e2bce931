-- stance_changes --
-- What the council's record teaches (migration 0012's views, over the core tables
-- alone): each stance change of one thread, oldest claim first.
SELECT * FROM council_v_stance_changes WHERE thread_id = :thread_id
ORDER BY created_at, claim_id

-- claim_outcomes --
-- Calibration's input: each claim's confidence and what became of its node, of one
-- thread (:thread_id) or of every thread (NULL).
SELECT model, provider, claim_type, confidence, outcome FROM council_v_claim_outcomes
WHERE CAST(:thread_id AS uuid) IS NULL OR thread_id = CAST(:thread_id AS uuid)
ORDER BY model, provider, claim_id
