-- The advisory-lock key of one logical node: a namespaced 64-bit hash of its id, the key
-- every decision on the node is serialised on (council/sql/locks.sql lock_node, the
-- committer's commit_begin, reversal's lock order). The same expression the statements
-- wrote out before this revision, so old and new statements agree on the lock. A single
-- SQL expression, IMMUTABLE and not SECURITY DEFINER: the planner inlines it, so calling it
-- costs what writing the expression out cost.
CREATE FUNCTION council_node_lock_key_v1(logical_node_id uuid) RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT hashtextextended('council.node:' || CAST(logical_node_id AS text), 0) $$;
COMMENT ON FUNCTION council_node_lock_key_v1(uuid) IS
    'The advisory-lock key of a logical node: every decision on the node holds it (transaction-scoped)';

-- A function is executable by PUBLIC unless revoked; the application takes node locks.
REVOKE ALL ON FUNCTION council_node_lock_key_v1(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION council_node_lock_key_v1(uuid) TO council_app;
