-- Council ledger, revision 0044: one SQL function per run phase (issue 46, item 2).
--
-- A run's first transaction cost Postgres four statements (six round trips with BEGIN and
-- COMMIT): the claim, its round's shared briefing, the text of the evidence the briefing
-- gives inline, then the request stored with its exposures. council_begin_run_v1 does the
-- first three in one call and returns them as one JSON document; the request is then
-- compiled in Python (one implementation, council.agents.compiler) and stored in the same
-- transaction, as before. Like procrastinate's functions, it carries a version in its name
-- and is never edited in place: a change is a council_begin_run_v2 in a later revision.
--
-- It runs as the invoker (no SECURITY DEFINER): it writes what the worker's role may
-- write already (agent_runs, run_attempts), so it needs no privilege of its own, and
-- every trigger and setting of the transaction (council.held_runs, the event shape
-- checks) applies to it as to the statements it replaces.
--
-- The document:
--   state     'claimed'; or, when nothing was claimed, 'done' (the run is terminal),
--             'leased' (a live attempt holds it, or its request was stored by one), 'missing'
--   run       the claimed row, the columns of the claim_run query before it (what earlier
--             attempts were billed, agent_down, dispatch_rounds, quorum_rule included)
--   briefing  for a run of a dispatch with no stored request: its round's stored shared
--             briefing {sha256, body} (null: not stored, the round is opened in Python)
--   evidence  with that briefing, for a run whose pinned runtime is one of p_api_runtimes
--             (an API model, given evidence inline): [{id, content, source_uri}] of each
--             evidence item the briefing's packet names; else null.
-- The claim itself is the claim_run query of council/sql/runs.sql, unchanged: the lease,
-- the fencing token (attempt + 1), the attempt's record, a takeover's record.

CREATE FUNCTION council_begin_run_v1(
    p_run_id uuid, p_owner text, p_lease_s double precision, p_held_attempt integer, p_api_runtimes text[]
) RETURNS jsonb
LANGUAGE plpgsql
AS $$
DECLARE
    v_run jsonb;
    v_briefing jsonb;
    v_evidence jsonb;
    v_status text;
BEGIN
    WITH before AS (
        SELECT r.id, r.status, r.attempt, r.lease_owner FROM agent_runs r
        WHERE r.id = p_run_id
          AND (r.status IN ('created', 'queued')
               OR (r.status = 'running' AND r.lease_expires_at < clock_timestamp())
               OR (r.status = 'running' AND r.attempt = p_held_attempt))
        FOR UPDATE
    ), claimed AS (
        UPDATE agent_runs a
        SET status = 'running',
            attempt = a.attempt + 1,
            lease_owner = p_owner,
            lease_expires_at = clock_timestamp() + make_interval(secs => p_lease_s),
            started_at = coalesce(a.started_at, clock_timestamp())
        FROM before b
        WHERE a.id = b.id
        RETURNING a.id, a.attempt, a.thread_id, a.dispatch_id, a.agent, a.model, a.provider, a.simulated,
                  a.round, a.mode, a.proposal_id, a.request, a.request_sha256, a.executor, a.control_of,
                  a.usage, a.cost_usd::float8 AS cost_usd,
                  (SELECT jsonb_build_object('round', p.round, 'error', p.error) FROM agent_runs p
                   WHERE a.round > 1 AND p.dispatch_id = a.dispatch_id AND p.agent = a.agent
                     AND p.round < a.round AND p.status = 'failed'
                     AND p.usage ->> 'failure' IN ('permanent', 'unreachable')
                   ORDER BY p.round LIMIT 1) AS agent_down,
                  (SELECT d.rounds FROM dispatches d WHERE d.id = a.dispatch_id) AS dispatch_rounds,
                  (SELECT rs.body ? 'min_council_answered' FROM threads th JOIN rule_sets rs ON rs.id = th.rule_set_id
                   WHERE th.id = a.thread_id) AS quorum_rule
    ), taken_over AS (
        INSERT INTO run_attempts (run_id, attempt, event, worker, status, reason)
        SELECT b.id, b.attempt, 'ended', b.lease_owner,
               CASE WHEN b.attempt = p_held_attempt THEN 'released' ELSE 'lease_expired' END,
               CASE WHEN b.attempt = p_held_attempt
                    THEN 'cut off by a transient error; its retry by ' || p_owner || ' took it over'
                    ELSE 'lease expired; taken over by ' || p_owner END
        FROM before b
        WHERE b.status = 'running'
    ), logged AS (
        INSERT INTO run_attempts (run_id, attempt, event, worker)
        SELECT c.id, c.attempt, 'claimed', p_owner FROM claimed c
    )
    SELECT to_jsonb(c) INTO v_run FROM claimed c;

    IF v_run IS NULL THEN
        SELECT r.status INTO v_status FROM agent_runs r WHERE r.id = p_run_id;
        RETURN jsonb_build_object(
            'state',
            CASE WHEN v_status IS NULL THEN 'missing'
                 WHEN v_status IN ('succeeded', 'failed') THEN 'done'
                 ELSE 'leased' END
        );
    END IF;

    IF v_run ->> 'dispatch_id' IS NOT NULL AND jsonb_typeof(v_run -> 'request') IS DISTINCT FROM 'object' THEN
        SELECT jsonb_build_object('sha256', d.briefing_sha256, 'body', b.body) INTO v_briefing
        FROM dispatch_rounds d JOIN round_briefings b ON b.sha256 = d.briefing_sha256
        WHERE d.dispatch_id = CAST(v_run ->> 'dispatch_id' AS uuid) AND d.round = CAST(v_run ->> 'round' AS integer);
        IF v_briefing IS NOT NULL AND (v_run -> 'executor' ->> 'runtime') = ANY (p_api_runtimes) THEN
            SELECT coalesce(jsonb_agg(jsonb_build_object('id', e.id, 'content', e.content, 'source_uri', e.source_uri)),
                            '[]'::jsonb)
            INTO v_evidence
            FROM evidence e
            WHERE e.id IN (
                SELECT CAST(x ->> 'id' AS uuid)
                FROM jsonb_array_elements(coalesce(v_briefing -> 'body' -> 'packet' -> 'evidence', '[]'::jsonb)) AS x
            );
        END IF;
    END IF;

    RETURN jsonb_build_object('state', 'claimed', 'run', v_run, 'briefing', v_briefing, 'evidence', v_evidence);
END
$$;
COMMENT ON FUNCTION council_begin_run_v1(uuid, text, double precision, integer, text[]) IS
    'A run claimed for an attempt with its round''s briefing and inline evidence, as one document (revision 0044)';
-- As every council function: no one but the owner and the application's role runs it.
REVOKE ALL ON FUNCTION council_begin_run_v1(uuid, text, double precision, integer, text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION council_begin_run_v1(uuid, text, double precision, integer, text[]) TO council_app;
