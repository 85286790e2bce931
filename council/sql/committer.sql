-- commit_weights --
-- Before any lock: the claims on each of :version_ids (a version that does
-- not exist is absent), to size the committer's transactions.
SELECT nv.id, (SELECT count(*) FROM claims c WHERE c.node_version_id = nv.id) AS claims
FROM node_versions nv
WHERE nv.id = ANY(CAST(:version_ids AS uuid[]))

-- commit_begin --
-- First statement of a consolidation transaction, for a batch of node versions
-- (any number; one is a batch of one): SET LOCAL the lock and statement
-- timeouts, and generic plans for the prepared statements that follow (their
-- shapes never change; a custom plan for each batch size costs more to plan
-- than to run), and report the isolation level (row s), then take the batch's locks,
-- transaction-scoped, in one fixed order (deadlock-free between batches and with every
-- other taker of these keys):
--   1. the alternatives key of each thread of the batch whose rule set has
--      exclusive_alternatives (council_alternatives_lock_key_v1, revision 0040), in
--      ascending key order (lateral a). At most one alternative of a set may hold a live
--      consolidation (invariant 8); the set is a component of contradicts edges and option
--      sets that can grow while a decision runs (a new edge joins two sets), so no key
--      derived from its members is stable, but a set never leaves its thread: the thread's
--      key covers every set of it as it is and as it will be. Whether a thread needs the key
--      is read from its pinned rule set, which never changes, so it is the same before and
--      after any wait. Every version of such a thread takes it, in a set or not yet (an edge
--      may put it in one), and so does a write of a contradicts edge there
--      (alternatives_guard), before it reads whether the edge would join two live
--      alternatives. No one takes a thread's key while holding a node key;
--   2. each version's logical-node lock, in ascending key order (lateral v).
-- As :wait says: 'exclusive' waits for each; 'try' takes the free ones without waiting and,
-- where another transaction holds one (its node, or its thread's alternatives, is being
-- decided now), waits for a shared lock instead, granted to every such waiter at once when
-- the holder ends, to read what the holder decided, never to decide (`locked` is false
-- there: the shared lock's void result IS NOT NULL, and a constant false would be folded
-- away with the call). A version whose thread's key was only shared takes its node's
-- lock shared too. Either way a wait is only ever for a key above every one held (the
-- thread keys all come before the node keys). The lateral subqueries read s, so the
-- timeouts are set before any lock is waited for; the locks, volatile, are taken after
-- each sort. One row per version found (a single row of NULLs but the isolation when none is).
-- Nothing read by this statement's own snapshot may be trusted for the
-- decision (it predates the lock waits; the version rows it reads are
-- immutable, and so is a thread's rule set), but `live`, each node's live consolidation,
-- is read right after that node's lock by a VOLATILE function, with a fresh snapshot
-- (revision 0014): a repeat of a consolidated version is answered from this statement alone.
SELECT s.isolation, v.id, v.logical_node_id, v.thread_id, v.content, v.locked,
       CASE WHEN v.locked IS NOT NULL THEN council_live_consolidation_v1(v.logical_node_id) END AS live
FROM (SELECT set_config('lock_timeout', :lock_timeout, true) AS lock_timeout,
             set_config('statement_timeout', :statement_timeout, true) AS statement_timeout,
             set_config('plan_cache_mode', 'force_generic_plan', true) AS plan_cache_mode,
             current_setting('transaction_isolation') AS isolation) AS s
LEFT JOIN LATERAL (
    SELECT coalesce(json_object_agg(k.thread_id, k.held), '{}'::json) AS held
    FROM (
        SELECT t.thread_id,
               CASE WHEN CAST(:wait AS text) <> 'try' THEN pg_advisory_xact_lock(t.key) IS NOT NULL
                    WHEN pg_try_advisory_xact_lock(t.key) THEN true
                    ELSE pg_advisory_xact_lock_shared(t.key) IS NULL
               END AS held
        FROM (SELECT DISTINCT nv.thread_id, council_alternatives_lock_key_v1(nv.thread_id) AS key
              FROM node_versions nv
              JOIN threads th ON th.id = nv.thread_id
              JOIN rule_sets rs ON rs.id = th.rule_set_id
              WHERE nv.id = ANY(CAST(:version_ids AS uuid[]))
                AND rs.body @> '{"exclusive_alternatives": true}'
                AND s.lock_timeout IS NOT NULL AND s.statement_timeout IS NOT NULL) AS t
        ORDER BY t.key, t.thread_id
    ) AS k
) AS a ON true
LEFT JOIN LATERAL (
    SELECT nv.id, nv.logical_node_id, nv.thread_id, nv.content,
           CASE WHEN CAST(:wait AS text) <> 'try' THEN pg_advisory_xact_lock(
                     council_node_lock_key_v1(nv.logical_node_id)) IS NOT NULL
                WHEN (a.held ->> CAST(nv.thread_id AS text)) = 'false' THEN pg_advisory_xact_lock_shared(
                     council_node_lock_key_v1(nv.logical_node_id)) IS NULL
                WHEN pg_try_advisory_xact_lock(
                     council_node_lock_key_v1(nv.logical_node_id)) THEN true
                ELSE pg_advisory_xact_lock_shared(
                     council_node_lock_key_v1(nv.logical_node_id)) IS NULL
           END AS locked
    FROM node_versions nv
    WHERE nv.id = ANY(CAST(:version_ids AS uuid[]))
      AND s.lock_timeout IS NOT NULL AND s.statement_timeout IS NOT NULL AND a.held IS NOT NULL
    ORDER BY council_node_lock_key_v1(nv.logical_node_id), nv.id
) AS v ON true

-- commit_live --
-- After the node locks: each logical node's live consolidation, if any (fast
-- path for repeated evaluations), by logical node id, and shared locks on the
-- evidence now cited on the versions, in ascending key order.
SELECT (SELECT coalesce(json_object_agg(c.logical_node_id, json_build_object(
                   'id', c.id, 'node_version_id', c.node_version_id,
                   'snapshot_sha256', c.snapshot_sha256, 'reasons', c.decision -> 'reasons')), '{}'::json)
        FROM consolidations c
        WHERE c.logical_node_id = ANY(CAST(:logical_node_ids AS uuid[])) AND c.status = 'live') AS live,
       (SELECT coalesce(json_agg(e.evidence_id), '[]'::json)
        FROM (SELECT evidence_id, pg_advisory_xact_lock_shared(
                         hashtextextended('council.evidence:' || CAST(evidence_id AS text), 0)) AS locked
              FROM (SELECT DISTINCT evidence_id FROM citations
                    WHERE node_version_id = ANY(CAST(:version_ids AS uuid[]))) d
              ORDER BY hashtextextended('council.evidence:' || CAST(evidence_id AS text), 0)) e) AS locked

-- commit_decided --
-- Idempotency: for each (version_id, digest) of the JSON array :decided, a
-- consolidation or recorded evaluation of that version with that exact
-- snapshot hash. A chained evaluation can only be the chain's tail (an older
-- snapshot of a version never recurs: its manifest only gains rows; revision
-- 0013), found by council_evaluation_tail_v2; a row written before 0013 is
-- found by its hash.
SELECT x.version_id,
       (SELECT json_build_object('id', c.id, 'reasons', c.decision -> 'reasons') FROM consolidations c
        WHERE c.node_version_id = x.version_id AND c.snapshot_sha256 = x.digest) AS consolidation,
       (SELECT json_build_object('id', e.id, 'reasons', coalesce(e.reasons, (
                   SELECT jsonb_agg(dr.reason ORDER BY u.n)
                   FROM unnest(coalesce(e.reason_ids, council_reason_ids_v1(e.reason_refs)))
                        WITH ORDINALITY AS u(id, n)
                   JOIN decision_reasons dr ON dr.id = u.id)))
        FROM council_evaluation_tail_v2(x.version_id) e
        WHERE coalesce(e.snapshot_sha256, encode(e.digest, 'hex')) = x.digest
        UNION ALL
        SELECT json_build_object('id', e.id, 'reasons', e.reasons) FROM consolidation_evaluations e
        WHERE e.node_version_id = x.version_id AND e.snapshot_sha256 = x.digest AND e.seq IS NULL
        LIMIT 1) AS evaluation
FROM jsonb_to_recordset(CAST(:decided AS jsonb)) AS x(version_id uuid, digest text)

-- commit_write --
-- The positive decisions of a batch (JSON array :items, one per version, at
-- most one per logical node) in one statement: for each, the consolidation,
-- its evidence index, the stable memory item, the version's `resolved`
-- transition and the event.
WITH x AS (
    SELECT * FROM jsonb_to_recordset(CAST(:items AS jsonb)) AS x(
        thread_id uuid, logical_node_id uuid, version_id uuid, rule_set_id text,
        grouping_algorithm_id text, snapshot jsonb, digest text, decision jsonb, evidence_ids jsonb,
        content text, from_status text, reason text, payload jsonb)
), c AS (
    INSERT INTO consolidations (thread_id, logical_node_id, node_version_id, rule_set_id,
                                grouping_algorithm_id, snapshot, snapshot_sha256, decision)
    SELECT thread_id, logical_node_id, version_id, rule_set_id, grouping_algorithm_id, snapshot, digest,
           decision
    FROM x
    RETURNING id, node_version_id
), ev AS (
    INSERT INTO consolidation_evidence (evidence_id, consolidation_id)
    SELECT CAST(e AS uuid), c.id
    FROM c JOIN x ON x.version_id = c.node_version_id, jsonb_array_elements_text(x.evidence_ids) AS e
), m AS (
    INSERT INTO memory_items (thread_id, consolidation_id, logical_node_id, node_version_id, content)
    SELECT x.thread_id, c.id, x.logical_node_id, x.version_id, x.content
    FROM c JOIN x ON x.version_id = c.node_version_id
    RETURNING id, node_version_id
), s AS (
    INSERT INTO node_status_transitions (node_version_id, from_status, to_status, reason, actor,
                                         consolidation_id)
    SELECT x.version_id, x.from_status, 'resolved', x.reason, :actor, c.id
    FROM c JOIN x ON x.version_id = c.node_version_id
), e AS (
    INSERT INTO events (thread_id, kind, subject_id, actor, payload)
    SELECT x.thread_id, 'consolidation.committed', CAST(c.id AS text), :actor,
           x.payload || jsonb_build_object('memory_item_id', m.id)
    FROM c JOIN x ON x.version_id = c.node_version_id JOIN m ON m.node_version_id = c.node_version_id
)
SELECT c.node_version_id AS version_id, c.id AS consolidation_id, m.id AS memory_item_id
FROM c JOIN m ON m.node_version_id = c.node_version_id

-- commit_not_ready --
-- The non-positive decisions of a batch (JSON array :items), recorded each as
-- the next row of its version's evaluation chain in the compact layout of
-- revision 0014: its id from (version, seq), the binary link (:items' hex; a
-- root holds the whole manifest and section hashes, a link the change since
-- the evaluation before it), the snapshot hash as 32 bytes and its reasons'
-- ids (found by content, stored by evaluation_reasons just before), 2 bytes
-- each (council_reason_refs_v1). A root keeps the columns its links share (thread, logical
-- node, rule set, grouping, outcome). Each with its event, in one statement.
WITH x AS (
    SELECT * FROM jsonb_to_recordset(CAST(:items AS jsonb)) AS x(
        thread_id uuid, logical_node_id uuid, version_id uuid, rule_set_id text,
        grouping_algorithm_id text, digest text, reasons jsonb, seq integer, root boolean,
        link text, claims_seen integer, failed jsonb)
), ev AS (
    INSERT INTO consolidation_evaluations (id, thread_id, logical_node_id, node_version_id, rule_set_id,
                                           grouping_algorithm_id, outcome, digest, reason_refs, seq, link,
                                           claims_seen)
    SELECT council_evaluation_id_v1(x.version_id, x.seq),
           CASE WHEN x.root THEN x.thread_id END, CASE WHEN x.root THEN x.logical_node_id END,
           x.version_id, CASE WHEN x.root THEN x.rule_set_id END,
           CASE WHEN x.root THEN x.grouping_algorithm_id END, CASE WHEN x.root THEN 'not_ready' END,
           decode(x.digest, 'hex'),
           council_reason_refs_v1(ARRAY(
               SELECT dr.id FROM jsonb_array_elements(x.reasons) WITH ORDINALITY AS r(reason, n)
               JOIN decision_reasons dr
                 ON CAST(md5(CAST(dr.reason AS text)) AS uuid) = CAST(md5(CAST(r.reason AS text)) AS uuid)
               ORDER BY r.n)),
           x.seq, decode(x.link, 'hex'), x.claims_seen
    FROM x
    RETURNING id, node_version_id
), e AS (
    INSERT INTO events (thread_id, kind, subject_id, actor, payload)
    SELECT x.thread_id, 'consolidation.not_ready', CAST(ev.node_version_id AS text), :actor,
           jsonb_build_object('evaluation_id', ev.id, 'failed', x.failed)
    FROM ev JOIN x ON x.version_id = ev.node_version_id
)
SELECT node_version_id AS version_id, id AS evaluation_id FROM ev
