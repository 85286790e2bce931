-- Council ledger, revision 0040: exclusive alternatives (docs/architecture.md §4).
--
-- Some propositions cannot both hold. Rivals form an alternative set: the connected
-- component, within one thread, of two kinds of link between logical nodes —
--   * a `contradicts` edge between two of their versions (an agent's output, or
--     `node add --contradicts`): the edge names versions, the rivalry holds between
--     their logical nodes, so a revision of either stays a rival;
--   * membership of one option set: the options of a multiple-choice question
--     (`ask --option`, an imported record's options or answers), recorded here.
-- Nothing else is stored about a set: it is derived when read
-- (council_alternative_set_v1), so a new edge joining two sets needs no rewrite.
--
-- Under a rule set with exclusive_alternatives (council-default-v3, seeded by the
-- migration's Python) at most one alternative of a set holds a live consolidation
-- (invariant 8). Decisions on a thread under such a rule set, and writes that could
-- join two sets (a contradicts edge there), serialize on the thread's alternatives key
-- (council_alternatives_lock_key_v1), always taken before any node key: a set never
-- leaves its thread, so the thread's key covers the set however it grows.

CREATE TABLE option_sets (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    thread_id uuid NOT NULL REFERENCES threads (id),
    origin text NOT NULL CHECK (origin IN ('ask', 'import')),
    actor text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
COMMENT ON TABLE option_sets IS
    'The options of one multiple-choice question (ask --option, an imported record): one alternative set';
CREATE INDEX option_sets_thread_idx ON option_sets (thread_id);

CREATE TABLE option_set_members (
    logical_node_id uuid PRIMARY KEY REFERENCES logical_nodes (id),
    option_set_id uuid NOT NULL REFERENCES option_sets (id),
    thread_id uuid NOT NULL REFERENCES threads (id),
    label text CHECK (length(btrim(label)) BETWEEN 1 AND 100),  -- none for a record's free answers
    ordinal integer NOT NULL CHECK (ordinal >= 0),
    UNIQUE (option_set_id, label),
    UNIQUE (option_set_id, ordinal)
);
COMMENT ON TABLE option_set_members IS
    'An option of an option set: its logical node, its label (A, B, ...; none for a free answer) and its place';

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['option_sets', 'option_set_members'] LOOP
        EXECUTE format('CREATE TRIGGER %I BEFORE UPDATE OR DELETE ON %I '
                       'FOR EACH ROW EXECUTE FUNCTION council_refuse_mutation_v1()', t || '_immutable', t);
        EXECUTE format('CREATE TRIGGER %I BEFORE TRUNCATE ON %I '
                       'FOR EACH STATEMENT EXECUTE FUNCTION council_refuse_mutation_v1()', t || '_no_truncate', t);
    END LOOP;
END;
$$;
GRANT SELECT, INSERT ON option_sets, option_set_members TO council_app;

-- The logical nodes of the alternative set of one logical node, itself included (alone
-- when it has no rival): the component of contradicts edges (either direction) and option
-- sets. STABLE, so inside a statement it reads that statement's snapshot: the committer's
-- manifest and the frontier see the set as of their one view of the data. Every link is
-- found by index (node versions by logical node, edges by from and by to version, option
-- members by node and by set); UNION ends the recursion at the set's size. PL/pgSQL, not
-- SQL: its plan is prepared once a session, where a SQL function's is made again at every
-- call; ROWS 4 (a set is a few options), so that a caller joins its members by index
-- rather than scanning every logical node for the default estimate of 1,000.
CREATE FUNCTION council_alternative_set_v1(node uuid) RETURNS SETOF uuid
    LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE ROWS 4
AS $$
BEGIN
    RETURN QUERY
    WITH RECURSIVE member(id) AS (
        SELECT node
        UNION
        SELECT linked.id
        FROM member m
        CROSS JOIN LATERAL (
            SELECT t.logical_node_id AS id
            FROM node_versions f
            JOIN edges e ON e.from_version_id = f.id AND e.kind = 'contradicts'
            JOIN node_versions t ON t.id = e.to_version_id
            WHERE f.logical_node_id = m.id
            UNION ALL
            SELECT f.logical_node_id
            FROM node_versions t
            JOIN edges e ON e.to_version_id = t.id AND e.kind = 'contradicts'
            JOIN node_versions f ON f.id = e.from_version_id
            WHERE t.logical_node_id = m.id
            UNION ALL
            SELECT o.logical_node_id
            FROM option_set_members mine
            JOIN option_set_members o ON o.option_set_id = mine.option_set_id
            WHERE mine.logical_node_id = m.id
        ) AS linked
    )
    SELECT member.id FROM member;
END
$$;
COMMENT ON FUNCTION council_alternative_set_v1(uuid) IS
    'The logical nodes of a node''s alternative set (contradicts edges and option sets), itself included';
CREATE INDEX option_set_members_set_idx ON option_set_members (option_set_id);

-- The advisory-lock key of a thread's alternative sets: a committer deciding a version of
-- a thread whose rule set has exclusive_alternatives holds it (exclusive, or shared while
-- it only answers a repeat), taken before any node key; so does a write that adds a
-- contradicts edge there. Namespaced apart from node and evidence keys.
CREATE FUNCTION council_alternatives_lock_key_v1(thread_id uuid) RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT hashtextextended('council.alternatives:' || CAST(thread_id AS text), 0) $$;
COMMENT ON FUNCTION council_alternatives_lock_key_v1(uuid) IS
    'The advisory-lock key of a thread''s alternative sets (exclusive_alternatives), taken before node keys';

REVOKE ALL ON FUNCTION council_alternative_set_v1(uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION council_alternatives_lock_key_v1(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION council_alternative_set_v1(uuid) TO council_app;
GRANT EXECUTE ON FUNCTION council_alternatives_lock_key_v1(uuid) TO council_app;

-- A record imported before this revision: its propositions (its options, or its distinct
-- free answers: one question's answers) become one option set, as an import now makes them.
-- Its thread keeps the rule set it was pinned to (a thread never changes); `council eval
-- --rule-set council-default-v3` contests them all the same.
INSERT INTO option_sets (thread_id, origin, actor)
SELECT p.thread_id, 'import', 'migration:0040'
FROM imported_propositions p
GROUP BY p.thread_id
HAVING count(*) > 1;
INSERT INTO option_set_members (logical_node_id, option_set_id, thread_id, label, ordinal)
SELECT nv.logical_node_id, s.id, p.thread_id, CASE WHEN it.labelled THEN p.key END, p.ordinal
FROM imported_propositions p
JOIN node_versions nv ON nv.id = p.node_version_id
JOIN option_sets s ON s.thread_id = p.thread_id AND s.origin = 'import'
JOIN imported_threads it ON it.thread_id = p.thread_id;
