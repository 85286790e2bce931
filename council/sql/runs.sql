-- keep_answer_and_fence --
-- The writing transaction's first statement: keep what round :round of the attempt
-- returned (as keep_answer: the text once by its SHA-256, the round's row naming it, a
-- round kept twice writes nothing), whether or not the attempt still owns the run, then
-- lock the run row if it does (as fence_run; a zombie attempt finds nothing, and marks it holds
-- the run as fence_run does).
WITH text_kept AS (
    INSERT INTO answer_texts (sha256, body, byte_length, truncated)
    VALUES (:sha256, :body, :byte_length, :truncated)
    ON CONFLICT (sha256) DO NOTHING
), answer_kept AS (
    INSERT INTO run_answers (run_id, attempt, round, answer_sha256)
    VALUES (:run_id, :attempt, :round, :sha256)
    ON CONFLICT (run_id, attempt, round) DO NOTHING
)
SELECT id, attempt, thread_id, dispatch_id, round, agent, mode, proposal_id, request_sha256, control_of
FROM agent_runs
WHERE id = :run_id AND attempt = :attempt AND status = 'running'
  AND council_hold_v1(CAST(:run_id AS uuid), CAST(:attempt AS integer))
FOR UPDATE

-- fence_run --
-- Inside the writing transaction: lock the run row and check that this attempt
-- still owns it. A zombie attempt (its lease was taken over) finds nothing. The
-- transaction marks that it holds the run at this attempt (council_hold_v1, revision
-- 0041): the claims it writes are accepted only so. Whatever order the conditions are
-- evaluated in, the mark names the attempt presented, which a claim's check compares
-- with the run's current attempt and status: a zombie's mark never matches.
SELECT id, attempt, thread_id, dispatch_id, round, agent, mode, proposal_id, request_sha256, control_of
FROM agent_runs
WHERE id = :run_id AND attempt = :attempt AND status = 'running'
  AND council_hold_v1(CAST(:run_id AS uuid), CAST(:attempt AS integer))
FOR UPDATE

-- store_request --
-- Record the canonical request, its hash, its input features, its exposures
-- (JSON array :exposures) and the evidence it gives inline as opened (JSON array
-- :opened of evidence_id, file and tool) before the call, with the run.started event, fenced
-- on the attempt and only once: nothing when the attempt no longer owns the
-- run or a request is stored already. One statement, one round trip.
WITH stored AS (
    UPDATE agent_runs
    SET request = CAST(:request AS jsonb),
        request_sha256 = :request_sha256,
        input_fingerprint = CAST(:input_fingerprint AS jsonb)
    WHERE id = :run_id AND attempt = :attempt AND status = 'running' AND request_sha256 IS NULL
    RETURNING id, thread_id, agent
), exposed AS (
    INSERT INTO run_exposures (run_id, kind, channel, exposed_to_run_id, claim_id, node_version_id)
    SELECT s.id, e.kind, e.channel, e.exposed_to_run_id, e.claim_id, e.node_version_id
    FROM stored s,
         jsonb_to_recordset(CAST(:exposures AS jsonb))
             AS e(kind text, channel text, exposed_to_run_id uuid, claim_id uuid, node_version_id uuid)
), opened AS (
    INSERT INTO run_opened_evidence (run_id, attempt, evidence_id, file, tool)
    SELECT s.id, CAST(:attempt AS integer), o.evidence_id, o.file, o.tool
    FROM stored s, jsonb_to_recordset(CAST(:opened AS jsonb)) AS o(evidence_id uuid, file text, tool text)
    ON CONFLICT (run_id, attempt, evidence_id) DO NOTHING
), announced AS (
    INSERT INTO events (thread_id, kind, subject_id, actor, payload)
    SELECT thread_id, 'run.started', id::text, 'worker:' || agent, CAST(:payload AS jsonb) FROM stored
)
SELECT id FROM stored

-- next_round --
-- Create round :next_round of a dispatch once every run of the round before (its
-- control runs too) is terminal; idempotent (unique per dispatch, round and agent). Each
-- new run's parent is the same agent's run of the previous round, and it runs the
-- executor its parent was pinned to. Under a dispatch with controls, each new run of a
-- round shown stances (a deliberative dispatch's round 2 on, a council's round 3 on) gets
-- its control run in the same statement: the same agent, executor, parent and round,
-- control_of naming it (compiled on the blind briefing when it is claimed).
WITH made AS (
    INSERT INTO agent_runs (thread_id, dispatch_id, agent, model, provider, simulated, executor, parent_run_id,
                            round, mode, proposal_id, status)
    SELECT r.thread_id, r.dispatch_id, r.agent, r.model, r.provider, r.simulated, r.executor, r.id, :next_round,
           r.mode, r.proposal_id, 'created'
    FROM agent_runs r
    JOIN dispatches d ON d.id = r.dispatch_id
    WHERE r.dispatch_id = :dispatch_id AND r.round = :next_round - 1 AND r.control_of IS NULL
      AND :next_round <= d.rounds
      AND NOT EXISTS (SELECT 1 FROM agent_runs o WHERE o.dispatch_id = :dispatch_id AND o.round = :next_round - 1
                      AND o.status NOT IN ('succeeded', 'failed'))
    ORDER BY r.agent
    ON CONFLICT (dispatch_id, round, agent) WHERE dispatch_id IS NOT NULL AND control_of IS NULL DO NOTHING
    RETURNING *
), controls AS (
    INSERT INTO agent_runs (thread_id, dispatch_id, agent, model, provider, simulated, executor, parent_run_id,
                            round, mode, proposal_id, status, control_of)
    SELECT m.thread_id, m.dispatch_id, m.agent, m.model, m.provider, m.simulated, m.executor, m.parent_run_id,
           m.round, m.mode, m.proposal_id, 'created', m.id
    FROM made m JOIN dispatches d ON d.id = m.dispatch_id
    WHERE d.controls AND (d.mode <> 'council' OR m.round >= 3)
    ORDER BY m.agent
    RETURNING id, agent
)
SELECT id FROM (SELECT id, agent, 0 AS k FROM made UNION ALL SELECT id, agent, 1 FROM controls) n
ORDER BY n.agent, n.k

-- previous_round_stances --
-- The stances of a dispatch's previous round: what a deliberative run is shown (never a
-- control run's: a control is no member of the council), every value as text, in the
-- order shown (a uuid orders as its text does).
SELECT c.id::text AS claim_id, c.run_id::text AS run_id, r.agent, c.node_version_id::text AS node_version_id,
       c.claim_type AS type, c.confidence::text AS confidence, c.rationale
FROM agent_runs r JOIN claims c ON c.run_id = r.id
WHERE r.dispatch_id = :dispatch_id AND r.round = :round AND r.status = 'succeeded' AND r.control_of IS NULL
ORDER BY c.node_version_id, c.id

-- sweep_runs --
-- Runs to (re-)enqueue: created but never queued, queued for too long (a lost
-- message), or running with an expired lease. Marks created ones queued.
WITH stale AS (
    SELECT id, status FROM agent_runs
    WHERE (status IN ('created', 'queued') AND created_at < clock_timestamp() - make_interval(secs => :stale_s))
       OR (status = 'running' AND lease_expires_at < clock_timestamp())
    ORDER BY created_at
    LIMIT :limit
    FOR UPDATE SKIP LOCKED
), queued AS (
    UPDATE agent_runs a SET status = 'queued' FROM stale
    WHERE a.id = stale.id AND stale.status = 'created'
    RETURNING a.id
)
SELECT id FROM stale

-- release_run --
-- Give a claimed run back to the queue (a transient provider failure that the
-- task will retry later, possibly on another worker), fenced on the attempt;
-- the same statement ends the attempt's record with the reason and keeps what the
-- run was billed so far (usage, cost_usd; NULL usage keeps what is there), which the
-- next attempt's claim returns and adds to.
WITH released AS (
    UPDATE agent_runs a
    SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL,
        usage = coalesce(CAST(:usage AS jsonb), a.usage),
        cost_usd = CASE WHEN CAST(:usage AS jsonb) IS NULL THEN a.cost_usd ELSE :cost_usd END
    FROM agent_runs held
    WHERE a.id = :run_id AND held.id = a.id AND a.attempt = :attempt AND a.status = 'running'
    RETURNING a.id, a.attempt, held.lease_owner AS worker
), logged AS (
    INSERT INTO run_attempts (run_id, attempt, event, worker, status, reason)
    SELECT id, attempt, 'ended', worker, 'released', :reason FROM released
)
SELECT id FROM released
