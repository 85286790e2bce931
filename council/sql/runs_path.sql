-- add_exposures --
-- What a run was shown (JSON array :exposures of kind, channel and the run,
-- claim or node version it saw): append-only rows, in the array's order.
INSERT INTO run_exposures (run_id, kind, channel, exposed_to_run_id, claim_id, node_version_id)
SELECT CAST(:run_id AS uuid), e.kind, e.channel, e.exposed_to_run_id, e.claim_id, e.node_version_id
FROM jsonb_to_recordset(CAST(:exposures AS jsonb))
    AS e(kind text, channel text, exposed_to_run_id uuid, claim_id uuid, node_version_id uuid)

-- run_row --
-- One run, every column (`council run show` starts from it).
SELECT * FROM agent_runs WHERE id = :run_id

-- run_row_locked --
-- One run, every column, locked to the end of the transaction (closing a run recorded by hand).
SELECT * FROM agent_runs WHERE id = :run_id FOR UPDATE

-- run_exposures_of --
-- What a run was shown, each with the agent of the run it saw, in the order recorded.
SELECT x.*, whose.agent AS exposed_to_agent
FROM run_exposures x LEFT OUTER JOIN agent_runs whose ON whose.id = x.exposed_to_run_id
WHERE x.run_id = :run_id
ORDER BY x.created_at, x.id

-- run_claims_of --
-- The claims a run made, in the order it made them.
SELECT * FROM claims WHERE run_id = :run_id ORDER BY created_at

-- run_children --
-- The runs that continue a run (its later rounds), in the order created.
SELECT id FROM agent_runs WHERE parent_run_id = :run_id ORDER BY created_at

-- runs_of_thread --
-- Every run of a thread with its operational state, by creation.
SELECT * FROM agent_runs WHERE thread_id = :thread_id ORDER BY created_at, round, agent

-- runs_of_dispatch --
-- Every run of a dispatch, by round and agent.
SELECT * FROM agent_runs WHERE dispatch_id = :dispatch_id ORDER BY round, agent

-- dispatch_of_proposal --
-- The first dispatch made for a retraction proposal, if any (under the proposal's lock).
SELECT id FROM dispatches WHERE proposal_id = :proposal_id ORDER BY created_at LIMIT 1

-- add_dispatch --
-- A dispatch: its thread, mode, agents as named, rounds, proposal, idempotency key
-- with the hash of what it asked for, and whether its later rounds get control runs.
INSERT INTO dispatches (thread_id, mode, agents, rounds, proposal_id, idempotency_key, request_sha256, controls)
VALUES (:thread_id, :mode, CAST(:agents AS text[]), :rounds, CAST(:proposal_id AS uuid), :key, :request_sha256,
        :controls)
RETURNING id

-- add_first_round --
-- The first round of a dispatch (JSON array :runs of agent, model, provider, simulated and
-- its pinned executor), created, not yet enqueued; the ids come back in the array's order.
INSERT INTO agent_runs (thread_id, dispatch_id, agent, model, provider, simulated, executor, round, mode,
                        proposal_id, status)
SELECT CAST(:thread_id AS uuid), CAST(:dispatch_id AS uuid), r.value ->> 'agent', r.value ->> 'model',
       r.value ->> 'provider', CAST(r.value ->> 'simulated' AS boolean), r.value -> 'executor', 1,
       CAST(:mode AS text), CAST(:proposal_id AS uuid), 'created'
FROM jsonb_array_elements(CAST(:runs AS jsonb)) WITH ORDINALITY AS r(value, n)
ORDER BY r.n
RETURNING id

-- mark_queued --
-- Runs handed to the queue: created ones become queued (others are left as they are).
UPDATE agent_runs SET status = 'queued' WHERE id = ANY(CAST(:run_ids AS uuid[])) AND status = 'created'

-- waiting_of_dispatch --
-- A dispatch's runs still created or queued: not yet taken by a worker.
SELECT id FROM agent_runs WHERE dispatch_id = :dispatch_id AND status IN ('created', 'queued')

-- add_held_run --
-- A run begun outside the workers: running, its first attempt held by :held_by (its
-- recorder or an outside agent's session) with no lease expiry, so no worker or sweep
-- takes it; the same statement records who claimed that attempt.
WITH begun AS (
    INSERT INTO agent_runs (thread_id, agent, model, provider, parent_run_id, round, mode, status, attempt,
                            lease_owner, started_at)
    VALUES (:thread_id, :agent, :model, :provider, :parent_run_id, :round, 'external', 'running', 1,
            :held_by, clock_timestamp())
    RETURNING *
), logged AS (
    INSERT INTO run_attempts (run_id, attempt, event, worker)
    SELECT id, 1, 'claimed', :held_by FROM begun
)
SELECT * FROM begun

-- held_run_state --
-- Who holds a run and whether it is still running (a session acting for its own run).
SELECT attempt, lease_owner, status FROM agent_runs WHERE id = :run_id

-- run_claim_count --
-- How many claims a run made (the event of closing a run recorded by hand counts them).
SELECT count(*) AS claims FROM claims WHERE run_id = :run_id

-- held_by_sessions --
-- The begun runs the :holders (ended sessions) still hold, locked, by id: the row
-- each attempt holds, as the run is fenced (fence_run).
SELECT id, attempt, thread_id, dispatch_id, round, agent, mode, proposal_id, request_sha256, control_of FROM agent_runs
WHERE lease_owner = ANY(CAST(:holders AS text[])) AND status = 'running' AND mode = 'external'
ORDER BY id
FOR UPDATE
