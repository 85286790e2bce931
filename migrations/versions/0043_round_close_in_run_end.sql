-- Council ledger, revision 0043: a run's end says whether its round closed (issue 46, item 2).
--
-- Every run of a dispatch asked, in a transaction of its own after its end, whether its
-- round had closed (the round_closed_versions query): three round trips a run, for the
-- one answer in a round that says "closed". council_apply_run_v2 ends the run as
-- council_apply_run_v1 did (which every run's end now calls, claims or none: the
-- finish_run query's work) and then answers that question in the same call, so the writer
-- learns it in its own transaction: the next round is opened there when nothing is to be
-- decided first, and a run that leaves its round open writes nothing more.
--
-- Two runs of one round ending at once must not both see the other still running. So the
-- question is asked under a transaction-scoped advisory lock on the dispatch
-- (council_round_state_v1), the last lock the writing transaction takes: the second of
-- the two to take it holds it only after the first committed, and its read — a statement
-- of its own in a VOLATILE function, so a fresh snapshot under READ COMMITTED — sees the
-- first one's end. Everything that asks whether a round closed (a run's end, the sweep,
-- the last round's evaluation) asks through council_round_state_v1, so they all serialise
-- on the one key; nothing waited for while it is held takes another lock, so no deadlock.
--
-- council_end_run_v2 is council_end_run_v1 plus the heads of the rival alternatives of the
-- versions the output claims on (as the rival_heads query, under exclusive_alternatives):
-- the versions evaluated again after the run, read by the call that fences it rather than
-- by a statement of their own.
--
-- Like revision 0042's, these functions run as the invoker and are never edited in place.

-- council_dispatch_lock_key_v1: the one definition of a dispatch's advisory key.
CREATE FUNCTION council_dispatch_lock_key_v1(dispatch_id uuid) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT hashtextextended('council.dispatch:' || CAST(dispatch_id AS text), 0) $$;
COMMENT ON FUNCTION council_dispatch_lock_key_v1(uuid) IS
    'The advisory key serialising the question whether a round of a dispatch closed (revision 0043)';
REVOKE ALL ON FUNCTION council_dispatch_lock_key_v1(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION council_dispatch_lock_key_v1(uuid) TO council_app;

-- council_round_state_v1: under the dispatch's lock (taken first, held to the end of the
-- transaction), whether every run of round p_round of dispatch p_dispatch_id (its control
-- runs too) has ended, and then the node versions the round claimed on or made (a
-- revision carries no claim of its maker's): {"closed": bool, "versions": [uuid, ...]}
-- (versions empty while it is open). The statements after the lock see every end
-- committed before it was granted.
CREATE FUNCTION council_round_state_v1(p_dispatch_id uuid, p_round integer) RETURNS jsonb
LANGUAGE plpgsql
AS $$
DECLARE
    v_closed boolean;
    v_versions jsonb;
BEGIN
    PERFORM pg_advisory_xact_lock(council_dispatch_lock_key_v1(p_dispatch_id));
    SELECT NOT EXISTS (
        SELECT 1 FROM agent_runs o
        WHERE o.dispatch_id = p_dispatch_id AND o.round = p_round AND o.status NOT IN ('succeeded', 'failed')
    ) INTO v_closed;
    IF NOT v_closed THEN
        RETURN jsonb_build_object('closed', false, 'versions', '[]'::jsonb);
    END IF;
    SELECT coalesce(jsonb_agg(t.node_version_id ORDER BY t.node_version_id), '[]'::jsonb) INTO v_versions
    FROM (
        SELECT DISTINCT touched.node_version_id
        FROM agent_runs r
        CROSS JOIN LATERAL (
            SELECT c.node_version_id FROM claims c WHERE c.run_id = r.id
            UNION ALL
            SELECT v.id FROM node_versions v WHERE v.created_by_run_id = r.id
        ) touched
        WHERE r.dispatch_id = p_dispatch_id AND r.round = p_round
    ) t;
    RETURN jsonb_build_object('closed', true, 'versions', v_versions);
END
$$;
COMMENT ON FUNCTION council_round_state_v1(uuid, integer) IS
    'Whether a round of a dispatch closed, and what it touched, under the dispatch''s lock (revision 0043)';
REVOKE ALL ON FUNCTION council_round_state_v1(uuid, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION council_round_state_v1(uuid, integer) TO council_app;

-- council_end_run_v2: council_end_run_v1, and in the document's "rivals" the head versions
-- of the other members of the alternative sets of p_versions' nodes, on a thread whose rule
-- set has exclusive_alternatives (the rival_heads query of council/sql/alternatives.sql).
CREATE FUNCTION council_end_run_v2(
    p_run_id uuid, p_attempt integer, p_round integer, p_sha256 text, p_body text, p_byte_length integer,
    p_truncated boolean, p_versions uuid[], p_evidence uuid[]
) RETURNS jsonb
LANGUAGE plpgsql
AS $$
DECLARE
    v_ended jsonb;
    v_rivals jsonb;
BEGIN
    v_ended := council_end_run_v1(
        p_run_id, p_attempt, p_round, p_sha256, p_body, p_byte_length, p_truncated, p_versions, p_evidence
    );
    IF v_ended -> 'run' = 'null'::jsonb OR coalesce(cardinality(p_versions), 0) = 0 THEN
        RETURN v_ended || jsonb_build_object('rivals', '[]'::jsonb);
    END IF;
    SELECT coalesce(jsonb_agg(h.version_id ORDER BY h.version_id), '[]'::jsonb) INTO v_rivals
    FROM (
        SELECT DISTINCT ln.head_version_id AS version_id
        FROM node_versions nv
        JOIN threads th ON th.id = nv.thread_id
        JOIN rule_sets rs ON rs.id = th.rule_set_id AND rs.body @> '{"exclusive_alternatives": true}'
        CROSS JOIN LATERAL council_alternative_set_v1(nv.logical_node_id) AS a(id)
        JOIN logical_nodes ln ON ln.id = a.id
        WHERE nv.id = ANY (p_versions)
          AND a.id <> nv.logical_node_id
          AND ln.head_version_id IS NOT NULL
    ) h;
    RETURN v_ended || jsonb_build_object('rivals', v_rivals);
END
$$;
COMMENT ON FUNCTION council_end_run_v2(uuid, integer, integer, text, text, integer, boolean, uuid[], uuid[]) IS
    'council_end_run_v1 with the rival heads of the versions claimed on (revision 0043)';
REVOKE ALL ON FUNCTION council_end_run_v2(uuid, integer, integer, text, text, integer, boolean, uuid[], uuid[])
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION council_end_run_v2(uuid, integer, integer, text, text, integer, boolean, uuid[], uuid[])
    TO council_app;

-- council_apply_run_v2: council_apply_run_v1 (claims and citations, which may be none; the
-- run's end, its attempt's record and events), then, for a run it ended that belongs to a
-- dispatch, council_round_state_v1 of its round. Returns {"ended": bool, "dispatch_id",
-- "round", "state": {"closed", "versions"}} (dispatch_id and state null outside a
-- dispatch or when the attempt no longer owned the run).
CREATE FUNCTION council_apply_run_v2(
    p_run_id uuid, p_attempt integer, p_claims jsonb, p_citations jsonb, p_status text, p_usage jsonb,
    p_cost_usd double precision, p_error text, p_lint_findings jsonb, p_events jsonb
) RETURNS jsonb
LANGUAGE plpgsql
AS $$
DECLARE
    v_dispatch uuid;
    v_round integer;
BEGIN
    IF NOT council_apply_run_v1(
        p_run_id, p_attempt, p_claims, p_citations, p_status, p_usage, p_cost_usd, p_error, p_lint_findings,
        p_events
    ) THEN
        RETURN jsonb_build_object('ended', false, 'dispatch_id', NULL, 'round', NULL, 'state', NULL);
    END IF;
    SELECT r.dispatch_id, r.round INTO v_dispatch, v_round FROM agent_runs r WHERE r.id = p_run_id;
    IF v_dispatch IS NULL THEN
        RETURN jsonb_build_object('ended', true, 'dispatch_id', NULL, 'round', v_round, 'state', NULL);
    END IF;
    RETURN jsonb_build_object(
        'ended', true, 'dispatch_id', v_dispatch, 'round', v_round,
        'state', council_round_state_v1(v_dispatch, v_round)
    );
END
$$;
COMMENT ON FUNCTION council_apply_run_v2(uuid, integer, jsonb, jsonb, text, jsonb, double precision, text, jsonb, jsonb) IS
    'A run ended with its checked claims and events, and whether its round closed, in one call (revision 0043)';
REVOKE ALL ON FUNCTION
    council_apply_run_v2(uuid, integer, jsonb, jsonb, text, jsonb, double precision, text, jsonb, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    council_apply_run_v2(uuid, integer, jsonb, jsonb, text, jsonb, double precision, text, jsonb, jsonb) TO council_app;
