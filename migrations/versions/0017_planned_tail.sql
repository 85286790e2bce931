-- Council ledger, revision 0017: an evaluation chain's tail found by a function
-- whose plans are kept (docs/architecture.md §4).
--
-- council_evaluation_tail_v1 (revision 0014) is a SQL function called once per
-- version from a lateral join or subquery, where it is not inlined: the server
-- planned its body (a generate_series of 64 ids joined to the table, and a union)
-- on every call, about 1 ms of its CPU — and the committer asks for a tail twice
-- per evaluation. Version 2 says the same in PL/pgSQL, whose statements are
-- planned once per connection, and finds the tail by bisection: seq is gapless
-- from the last checkpoint or root (the committer writes seq = tail + 1 under the
-- node lock, revision 0014), so at most 6 ids are probed instead of 64.

CREATE FUNCTION council_evaluation_tail_v2(version uuid) RETURNS SETOF consolidation_evaluations
    LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE ROWS 1
AS $$
DECLARE
    lo integer;
    hi integer;
    mid integer;
    compact consolidation_evaluations;
    legacy consolidation_evaluations;
BEGIN
    -- The last checkpoint (every 64th compact row) or root: the chain has a row at
    -- every seq from it to its tail, and the tail is within 63 of it.
    SELECT greatest(
               (SELECT max(k.seq) FROM consolidation_evaluations k
                WHERE k.node_version_id = version AND k.link IS NOT NULL AND k.seq % 64 = 0),
               (SELECT max(r.seq) FROM consolidation_evaluations r
                WHERE r.node_version_id = version AND r.link IS NOT NULL AND r.rule_set_id IS NOT NULL))
    INTO lo;
    IF lo IS NOT NULL THEN
        hi := lo + 63;
        WHILE lo < hi LOOP  -- a row at lo, none after hi
            mid := (lo + hi + 1) / 2;
            IF EXISTS (SELECT 1 FROM consolidation_evaluations e
                       WHERE e.id = council_evaluation_id_v1(version, mid)) THEN
                lo := mid;
            ELSE
                hi := mid - 1;
            END IF;
        END LOOP;
        SELECT * INTO compact FROM consolidation_evaluations e WHERE e.id = council_evaluation_id_v1(version, lo);
    END IF;
    -- A chain of revision 0013 (a compact root continues it at the next seq).
    SELECT * INTO legacy FROM consolidation_evaluations o
    WHERE o.node_version_id = version AND o.link IS NULL AND o.seq IS NOT NULL
    ORDER BY o.seq DESC LIMIT 1;
    IF compact.id IS NOT NULL AND (legacy.id IS NULL OR compact.seq > legacy.seq) THEN
        RETURN NEXT compact;
    ELSIF legacy.id IS NOT NULL THEN
        RETURN NEXT legacy;
    END IF;
END;
$$;
COMMENT ON FUNCTION council_evaluation_tail_v2(uuid) IS
    'The newest chained evaluation of a node version (revisions 0013 and 0014), planned once per connection';
-- As version 1: the application runs it, nobody else (a function is executable by PUBLIC unless revoked).
REVOKE ALL ON FUNCTION council_evaluation_tail_v2(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION council_evaluation_tail_v2(uuid) TO council_app;
