-- Council ledger, revision 0014: compact evaluation chains (docs/architecture.md §4).
--
-- Since 0013 a not-ready evaluation of a hot node stores only what changed, but
-- each row still carried ~270 bytes of JSON delta (ids as 38-character strings,
-- 12-digit section hashes) and ~330 bytes of columns it shares with its chain:
-- thread and logical node (its version's), rule set and grouping (its root's),
-- the hash as 64 hex digits, the outcome (always not_ready), reasons as an
-- int[], and a (node_version_id, seq) index entry on top of the primary key.
-- A row written since this revision (link IS NOT NULL) holds:
--   * link: its manifest change in binary (council.domain.chain_codec): kind
--     byte R (a root: the whole manifest, every section hash in full) or L (a
--     link: the change since seq - 1, ids as 16 bytes, changed section hashes
--     as 2-byte prefixes);
--   * digest: the snapshot's SHA-256 as 32 bytes (snapshot_sha256 stays NULL);
--   * reason_refs: its reasons' decision_reasons ids as varints (one byte for
--     the small ids of the reasons most evaluations share; council_reason_refs_v1),
--     a reason found by content;
--   * no runs: a manifest's runs are its claims' runs, derived on reading;
--   * id = council_evaluation_id_v1(node_version_id, seq): the primary key is
--     the chain's key too, so no second index holds every row; only roots and
--     every 64th row are indexed by (node_version_id, seq), and a tail is found
--     by probing at most 64 ids after the last of them (seq is gapless: the
--     committer writes seq = tail + 1 under the node lock).
-- A root also keeps thread_id, logical_node_id, rule_set_id,
-- grouping_algorithm_id and outcome; a link leaves them NULL (a change of rule
-- set or grouping starts a new root). The view council_v_evaluations resolves
-- every evaluation's columns whatever its layout; every reader goes through it.
-- Rows written before (legacy, 0005 manifests, 0013 chains) are unchanged and
-- read as before; a version whose tail is a 0013 row continues with a root.

CREATE FUNCTION council_evaluation_id_v1(uuid, integer) RETURNS uuid
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN CAST(md5('council.evaluation:' || CAST($1 AS text) || ':' || CAST($2 AS text)) AS uuid);
COMMENT ON FUNCTION council_evaluation_id_v1(uuid, integer) IS
    'The id of a compact chained evaluation: from its version and seq (revision 0014)';

-- reason_refs: each id as a LEB128 varint (7 bits a byte, the high bit set on all but an
-- id's last byte): the ids of reasons every evaluation shares are small, one byte each.
CREATE FUNCTION council_reason_refs_v1(integer[]) RETURNS bytea
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
DECLARE
    out bytea := ''::bytea;
    id integer;
    rest integer;
BEGIN
    FOREACH id IN ARRAY $1 LOOP
        rest := id;
        WHILE rest >= 128 LOOP
            out := out || set_byte('\x00'::bytea, 0, (rest & 127) | 128);
            rest := rest >> 7;
        END LOOP;
        out := out || set_byte('\x00'::bytea, 0, rest);
    END LOOP;
    RETURN out;
END
$$;
COMMENT ON FUNCTION council_reason_refs_v1(integer[]) IS
    'A compact evaluation''s reason_refs for its reasons'' decision_reasons ids, in order';

CREATE FUNCTION council_reason_ids_v1(bytea) RETURNS integer[]
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
DECLARE
    out integer[] := '{}';
    id integer := 0;
    shift integer := 0;
    byte integer;
BEGIN
    FOR i IN 0 .. length($1) - 1 LOOP
        byte := get_byte($1, i);
        id := id | ((byte & 127) << shift);
        IF byte < 128 THEN
            out := out || id;
            id := 0;
            shift := 0;
        ELSE
            shift := shift + 7;
        END IF;
    END LOOP;
    RETURN out;
END
$$;
COMMENT ON FUNCTION council_reason_ids_v1(bytea) IS
    'The decision_reasons ids a compact evaluation''s reason_refs lists, in order';

-- A reason is found by its content: the MD5 of its jsonb text (one text per value), a
-- 16-byte key instead of the 64-digit SHA-256 column and its index (new rows leave it NULL).
ALTER TABLE decision_reasons ALTER COLUMN sha256 DROP NOT NULL;
ALTER TABLE decision_reasons DROP CONSTRAINT decision_reasons_sha256_key;
CREATE UNIQUE INDEX decision_reasons_content_key ON decision_reasons ((CAST(md5(CAST(reason AS text)) AS uuid)));
COMMENT ON TABLE decision_reasons IS
    'Each reason of recorded evaluations once, by content (decision_reasons_content_key)';

ALTER TABLE consolidation_evaluations ADD COLUMN link bytea;
ALTER TABLE consolidation_evaluations ADD COLUMN digest bytea;
ALTER TABLE consolidation_evaluations ADD COLUMN reason_refs bytea;
ALTER TABLE consolidation_evaluations ALTER COLUMN thread_id DROP NOT NULL;
ALTER TABLE consolidation_evaluations ALTER COLUMN logical_node_id DROP NOT NULL;
ALTER TABLE consolidation_evaluations ALTER COLUMN rule_set_id DROP NOT NULL;
ALTER TABLE consolidation_evaluations ALTER COLUMN grouping_algorithm_id DROP NOT NULL;
ALTER TABLE consolidation_evaluations ALTER COLUMN snapshot_sha256 DROP NOT NULL;
ALTER TABLE consolidation_evaluations ALTER COLUMN outcome DROP NOT NULL;

ALTER TABLE consolidation_evaluations ADD CONSTRAINT consolidation_evaluations_whole CHECK (
    link IS NOT NULL OR (
        thread_id IS NOT NULL AND logical_node_id IS NOT NULL AND rule_set_id IS NOT NULL
        AND grouping_algorithm_id IS NOT NULL AND snapshot_sha256 IS NOT NULL AND outcome IS NOT NULL
        AND digest IS NULL AND reason_refs IS NULL));
ALTER TABLE consolidation_evaluations ADD CONSTRAINT consolidation_evaluations_compact CHECK (
    link IS NULL OR (
        seq IS NOT NULL AND id = council_evaluation_id_v1(node_version_id, seq)
        AND snapshot IS NULL AND manifest IS NULL AND section_sha256 IS NULL AND delta IS NULL
        AND reasons IS NULL AND reason_ids IS NULL AND snapshot_sha256 IS NULL
        AND length(digest) = 32 AND reason_refs IS NOT NULL
        AND (length(reason_refs) = 0 OR get_byte(reason_refs, length(reason_refs) - 1) < 128)
        AND claims_seen IS NOT NULL
        -- a root (kind byte R) carries the columns its links share, a link (L) none
        AND CASE get_byte(link, 0)
                WHEN 82 THEN num_nulls(thread_id, logical_node_id, rule_set_id, grouping_algorithm_id, outcome) = 0
                WHEN 76 THEN seq > 0 AND num_nonnulls(thread_id, logical_node_id, rule_set_id,
                                                      grouping_algorithm_id, outcome) = 0
                ELSE false
            END));
ALTER TABLE consolidation_evaluations DROP CONSTRAINT consolidation_evaluations_replayable;
ALTER TABLE consolidation_evaluations ADD CONSTRAINT consolidation_evaluations_replayable CHECK (
    snapshot IS NOT NULL
    OR (manifest IS NOT NULL AND section_sha256 IS NOT NULL AND delta IS NULL)
    OR (manifest IS NULL AND delta IS NOT NULL AND seq > 0)
    OR link IS NOT NULL
);
ALTER TABLE consolidation_evaluations DROP CONSTRAINT consolidation_evaluations_reasoned;
ALTER TABLE consolidation_evaluations ADD CONSTRAINT consolidation_evaluations_reasoned
    CHECK (reasons IS NOT NULL OR reason_ids IS NOT NULL OR reason_refs IS NOT NULL);

-- The 0013 chain index keeps its rows (all of them: link is NULL before this revision) and no new ones.
DROP INDEX consolidation_evaluations_chain_idx;
CREATE UNIQUE INDEX consolidation_evaluations_chain_idx ON consolidation_evaluations (node_version_id, seq)
    INCLUDE (claims_seen) WHERE link IS NULL AND seq IS NOT NULL;
-- Compact roots (where a walk starts, and the rule set and grouping of their links) and every 64th row.
CREATE INDEX consolidation_evaluations_compact_roots_idx ON consolidation_evaluations (node_version_id, seq)
    INCLUDE (rule_set_id, grouping_algorithm_id) WHERE link IS NOT NULL AND rule_set_id IS NOT NULL;
CREATE INDEX consolidation_evaluations_checkpoints_idx ON consolidation_evaluations (node_version_id, seq)
    WHERE link IS NOT NULL AND seq % 64 = 0;

-- The newest chained evaluation of a version (0013 or compact), if any: the compact
-- tail is within 64 of the last root or checkpoint (seq is gapless), found by id.
CREATE FUNCTION council_evaluation_tail_v1(uuid) RETURNS SETOF consolidation_evaluations
    LANGUAGE sql STABLE STRICT PARALLEL SAFE ROWS 1
BEGIN ATOMIC
    SELECT t.*
    FROM (SELECT e.*
          FROM (SELECT greatest(
                    (SELECT max(k.seq) FROM consolidation_evaluations k
                     WHERE k.node_version_id = $1 AND k.link IS NOT NULL AND k.seq % 64 = 0),
                    (SELECT max(r.seq) FROM consolidation_evaluations r
                     WHERE r.node_version_id = $1 AND r.link IS NOT NULL AND r.rule_set_id IS NOT NULL)) AS at) c
          CROSS JOIN generate_series(c.at, c.at + 63) AS s(seq)
          JOIN consolidation_evaluations e ON e.id = council_evaluation_id_v1($1, s.seq)
          UNION ALL
          (SELECT o.* FROM consolidation_evaluations o
           WHERE o.node_version_id = $1 AND o.link IS NULL AND o.seq IS NOT NULL
           ORDER BY o.seq DESC LIMIT 1)) t
    ORDER BY t.seq DESC
    LIMIT 1;
END;
COMMENT ON FUNCTION council_evaluation_tail_v1(uuid) IS
    'The newest chained evaluation of a node version (revisions 0013 and 0014)';

-- Every evaluation with its columns resolved, whatever its layout.
CREATE VIEW council_v_evaluations AS
SELECT e.id,
       coalesce(e.thread_id, nv.thread_id) AS thread_id,
       coalesce(e.logical_node_id, nv.logical_node_id) AS logical_node_id,
       e.node_version_id,
       coalesce(e.rule_set_id, r.rule_set_id) AS rule_set_id,
       coalesce(e.grouping_algorithm_id, r.grouping_algorithm_id) AS grouping_algorithm_id,
       coalesce(e.snapshot_sha256, encode(e.digest, 'hex')) AS snapshot_sha256,
       coalesce(e.outcome, 'not_ready') AS outcome,
       coalesce(e.reasons, (SELECT jsonb_agg(dr.reason ORDER BY u.n)
                            FROM unnest(coalesce(e.reason_ids, council_reason_ids_v1(e.reason_refs)))
                                 WITH ORDINALITY AS u(id, n)
                            JOIN decision_reasons dr ON dr.id = u.id)) AS reasons,
       e.created_at,
       e.seq,
       e.claims_seen,
       e.link IS NOT NULL AS compact
FROM consolidation_evaluations e
JOIN node_versions nv ON nv.id = e.node_version_id
LEFT JOIN LATERAL (
    SELECT k.rule_set_id, k.grouping_algorithm_id FROM consolidation_evaluations k
    WHERE e.rule_set_id IS NULL AND k.node_version_id = e.node_version_id
      AND k.link IS NOT NULL AND k.rule_set_id IS NOT NULL AND k.seq <= e.seq
    ORDER BY k.seq DESC LIMIT 1
) r ON true;
COMMENT ON VIEW council_v_evaluations IS
    'Every recorded not_ready evaluation, its columns resolved from its version and chain (schema/views.md)';
GRANT SELECT ON council_v_evaluations TO council_app, council_dashboard;

CREATE OR REPLACE VIEW council_v_decisions AS
SELECT 'consolidation' AS kind,
       c.id AS decision_id,
       c.thread_id,
       c.logical_node_id,
       c.node_version_id,
       nv.version_no,
       c.rule_set_id,
       c.grouping_algorithm_id,
       c.snapshot_sha256,
       'committed' AS outcome,
       c.status AS consolidation_status,
       (SELECT count(*) FROM jsonb_array_elements(c.decision -> 'groups') AS g(grp)
        WHERE g.grp ->> 'kind' = 'support') AS support_groups,
       (SELECT count(*) FROM jsonb_array_elements(c.decision -> 'groups') AS g(grp)
        WHERE g.grp ->> 'kind' = 'dispute') AS dispute_groups,
       ARRAY(SELECT x.reason ->> 'rule' FROM jsonb_array_elements(c.decision -> 'reasons') WITH ORDINALITY
             AS x(reason, n) WHERE NOT (x.reason ->> 'ok')::boolean ORDER BY x.n) AS failed_rules,
       c.decision -> 'reasons' AS reasons,
       (SELECT m.id FROM memory_items m WHERE m.consolidation_id = c.id) AS memory_item_id,
       c.status_changed_at,
       c.created_at
FROM consolidations c
JOIN node_versions nv ON nv.id = c.node_version_id
UNION ALL
SELECT 'evaluation',
       e.id,
       e.thread_id,
       e.logical_node_id,
       e.node_version_id,
       nv.version_no,
       e.rule_set_id,
       e.grouping_algorithm_id,
       e.snapshot_sha256,
       e.outcome,
       NULL,
       NULL,
       NULL,
       ARRAY(SELECT x.reason ->> 'rule' FROM jsonb_array_elements(e.reasons)
             WITH ORDINALITY AS x(reason, n) WHERE NOT (x.reason ->> 'ok')::boolean ORDER BY x.n),
       e.reasons,
       NULL,
       NULL,
       e.created_at
FROM council_v_evaluations e
JOIN node_versions nv ON nv.id = e.node_version_id;

-- The committer's first statement takes the node locks and, for each node right after its
-- lock, reads its live consolidation: a VOLATILE function's query takes a fresh snapshot
-- (READ COMMITTED), so it sees what committed while the lock was waited for. A repeated
-- evaluation of a consolidated version ("already consolidated") then costs one statement
-- under the lock instead of two.
CREATE FUNCTION council_live_consolidation_v1(uuid) RETURNS json
    LANGUAGE plpgsql VOLATILE STRICT
AS $$
BEGIN
    RETURN (SELECT json_build_object('id', c.id, 'node_version_id', c.node_version_id,
                                     'snapshot_sha256', c.snapshot_sha256, 'reasons', c.decision -> 'reasons')
            FROM consolidations c WHERE c.logical_node_id = $1 AND c.status = 'live');
END
$$;
COMMENT ON FUNCTION council_live_consolidation_v1(uuid) IS
    'The live consolidation of a logical node, read with a fresh snapshot (the committer, after the node lock)';

-- A function is executable by PUBLIC unless revoked. The application runs these five;
-- the dashboards only the one a view they read calls (council_v_evaluations' reasons),
-- which returns no more than the view shows.
REVOKE ALL ON FUNCTION
    council_evaluation_id_v1(uuid, integer), council_reason_refs_v1(integer[]),
    council_reason_ids_v1(bytea), council_evaluation_tail_v1(uuid), council_live_consolidation_v1(uuid)
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    council_evaluation_id_v1(uuid, integer), council_reason_refs_v1(integer[]),
    council_reason_ids_v1(bytea), council_evaluation_tail_v1(uuid), council_live_consolidation_v1(uuid)
TO council_app;
GRANT EXECUTE ON FUNCTION council_reason_ids_v1(bytea) TO council_dashboard;
