-- Council ledger, revision 0042: one SQL function per run phase (issue 46, item 2).
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
    'A run claimed for an attempt with its round''s briefing and inline evidence, as one document (revision 0042)';
-- As every council function: no one but the owner and the application's role runs it.
REVOKE ALL ON FUNCTION council_begin_run_v1(uuid, text, double precision, integer, text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION council_begin_run_v1(uuid, text, double precision, integer, text[]) TO council_app;

-- council_end_run_v1: the writing transaction's first call (the statement keep_answer_and_fence
-- was, with the output check's two reads). It keeps what round p_round of the attempt
-- returned (the text once by its SHA-256, the round's row naming it; a round kept twice
-- writes nothing), whether or not the attempt still owns the run; then locks the run row if
-- it does, marking that the transaction holds it (council_hold_v1, as fence_run); and, for a
-- run it holds, reads what the output check needs of the output's references: the node
-- versions it claims on (p_versions: id, thread, branch, maker, and the type of the claim
-- this run has on it already) and which of the evidence it cites (p_evidence) is attached
-- to the run's thread. The check itself stays in Python (council.domain.output_check).
-- A zombie attempt gets {"run": null}: a result, not an error.
CREATE FUNCTION council_end_run_v1(
    p_run_id uuid, p_attempt integer, p_round integer, p_sha256 text, p_body text, p_byte_length integer,
    p_truncated boolean, p_versions uuid[], p_evidence uuid[]
) RETURNS jsonb
LANGUAGE plpgsql
AS $$
DECLARE
    v_run jsonb;
    v_claimable jsonb;
    v_attached jsonb;
BEGIN
    IF p_sha256 IS NOT NULL THEN
        INSERT INTO answer_texts (sha256, body, byte_length, truncated)
        VALUES (p_sha256, p_body, p_byte_length, p_truncated)
        ON CONFLICT (sha256) DO NOTHING;
        INSERT INTO run_answers (run_id, attempt, round, answer_sha256)
        VALUES (p_run_id, p_attempt, p_round, p_sha256)
        ON CONFLICT (run_id, attempt, round) DO NOTHING;
    END IF;

    SELECT to_jsonb(f) INTO v_run FROM (
        SELECT r.id, r.attempt, r.thread_id, r.dispatch_id, r.round, r.agent, r.mode, r.proposal_id,
               r.request_sha256, r.control_of
        FROM agent_runs r
        WHERE r.id = p_run_id AND r.attempt = p_attempt AND r.status = 'running'
          AND council_hold_v1(p_run_id, p_attempt)
        FOR UPDATE
    ) f;
    IF v_run IS NULL THEN
        RETURN jsonb_build_object('run', NULL);
    END IF;

    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'id', v.id, 'thread_id', v.thread_id, 'branch_id', v.branch_id,
               'created_by_run_id', v.created_by_run_id,
               'claimed_by_this_run',
               (SELECT c.claim_type FROM claims c WHERE c.run_id = p_run_id AND c.node_version_id = v.id LIMIT 1))),
           '[]'::jsonb)
    INTO v_claimable
    FROM node_versions v
    WHERE v.id = ANY (coalesce(p_versions, '{}'));

    SELECT coalesce(jsonb_agg(te.evidence_id), '[]'::jsonb) INTO v_attached
    FROM thread_evidence te
    WHERE te.thread_id = CAST(v_run ->> 'thread_id' AS uuid) AND te.evidence_id = ANY (coalesce(p_evidence, '{}'));

    RETURN jsonb_build_object('run', v_run, 'claimable', v_claimable, 'attached', v_attached);
END
$$;
COMMENT ON FUNCTION council_end_run_v1(uuid, integer, integer, text, text, integer, boolean, uuid[], uuid[]) IS
    'An attempt''s answer kept, its run fenced, and the output check''s facts, as one document (revision 0042)';
REVOKE ALL ON FUNCTION council_end_run_v1(uuid, integer, integer, text, text, integer, boolean, uuid[], uuid[])
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION council_end_run_v1(uuid, integer, integer, text, text, integer, boolean, uuid[], uuid[])
    TO council_app;

-- council_apply_run_v1: the end of a run that wrote claims, in one call (the statements
-- add_claims, add_citations and finish_run were). The claims (p_claims: id, node_version_id,
-- claim_type, confidence, rationale) and their citations (p_citations: id, node_version_id,
-- evidence_id, branch_id, claim_id, run_id, role, interpretation) were checked by the
-- writer, in this transaction, under the fence (council_end_run_v1 marked the run held: the
-- claims trigger accepts them only so); then the run's terminal state, its attempt's record
-- and its events (p_events: kind, actor, payload and subject_id when the subject is not the
-- run, appended in order: each claim's claim.added, run.output_applied, run.succeeded), as
-- finish_run writes them. Returns whether the run was ended (false: the attempt no longer
-- owns it; the claims trigger refuses the claims before that).
CREATE FUNCTION council_apply_run_v1(
    p_run_id uuid, p_attempt integer, p_claims jsonb, p_citations jsonb, p_status text, p_usage jsonb,
    p_cost_usd double precision, p_error text, p_lint_findings jsonb, p_events jsonb
) RETURNS boolean
LANGUAGE plpgsql
AS $$
DECLARE
    v_ended boolean;
BEGIN
    INSERT INTO claims (id, run_id, node_version_id, claim_type, confidence, rationale)
    SELECT c.id, p_run_id, c.node_version_id, c.claim_type, c.confidence, c.rationale
    FROM jsonb_to_recordset(p_claims)
        AS c(id uuid, node_version_id uuid, claim_type text, confidence numeric, rationale text);

    INSERT INTO citations (id, node_version_id, evidence_id, branch_id, claim_id, run_id, role, interpretation)
    SELECT c.id, c.node_version_id, c.evidence_id, c.branch_id, c.claim_id, c.run_id, c.role, c.interpretation
    FROM jsonb_to_recordset(p_citations)
        AS c(id uuid, node_version_id uuid, evidence_id uuid, branch_id uuid, claim_id uuid, run_id uuid,
             role text, interpretation text);

    WITH finished AS (
        UPDATE agent_runs a
        SET status = p_status,
            usage = p_usage,
            cost_usd = p_cost_usd,
            error = p_error,
            lint_findings = p_lint_findings,
            finished_at = clock_timestamp(),
            lease_owner = NULL,
            lease_expires_at = NULL
        FROM agent_runs held
        WHERE a.id = p_run_id AND held.id = a.id AND a.attempt = p_attempt AND a.status = 'running'
        RETURNING a.id, a.attempt, a.thread_id, held.lease_owner AS worker
    ), logged AS (
        INSERT INTO run_attempts (run_id, attempt, event, worker, status, reason)
        SELECT id, attempt, 'ended', worker, p_status, p_error FROM finished
    ), announced AS (
        INSERT INTO events (thread_id, kind, subject_id, actor, payload)
        SELECT f.thread_id, e.value ->> 'kind', coalesce(e.value ->> 'subject_id', f.id::text), e.value ->> 'actor',
               e.value -> 'payload'
        FROM finished f, jsonb_array_elements(p_events) WITH ORDINALITY AS e(value, n)
        ORDER BY e.n
    )
    SELECT EXISTS (SELECT 1 FROM finished) INTO v_ended;
    RETURN v_ended;
END
$$;
COMMENT ON FUNCTION council_apply_run_v1(uuid, integer, jsonb, jsonb, text, jsonb, double precision, text, jsonb, jsonb) IS
    'A run''s checked claims and citations written and the run ended with its events, in one call (revision 0042)';
REVOKE ALL ON FUNCTION
    council_apply_run_v1(uuid, integer, jsonb, jsonb, text, jsonb, double precision, text, jsonb, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    council_apply_run_v1(uuid, integer, jsonb, jsonb, text, jsonb, double precision, text, jsonb, jsonb) TO council_app;
