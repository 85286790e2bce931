-- debate_import_by_sha --
-- A file imported before (its SHA-256 is unique): importing it again writes nothing.
SELECT id, file_sha256, format, file_name, records, turns, created_at
FROM debate_imports WHERE file_sha256 = :file_sha256

-- debate_import_insert --
-- The import itself, first: its unique SHA-256 makes a concurrent second import of the
-- same file fail here, before it writes anything else.
INSERT INTO debate_imports (id, file_sha256, format, file_name, records, turns, actor)
VALUES (:id, :file_sha256, :format, :file_name, :records, :turns, :actor)

-- copy_threads --
-- One thread per record (set-based: COPY).
COPY threads (id, title, objective, rule_set_id, grouping_algorithm_id) FROM STDIN

-- copy_branches --
-- Each thread's main branch.
COPY branches (id, thread_id, kind, label) FROM STDIN

-- copy_imported_threads --
-- Which record each thread was, with its tags.
COPY imported_threads (thread_id, import_id, record_id, tags, labelled) FROM STDIN

-- copy_logical_nodes --
-- One logical node per proposition (an option, or a distinct free answer).
COPY logical_nodes (id, thread_id, branch_id) FROM STDIN

-- copy_node_versions --
-- Its first version (the version trigger writes its state and moves the head).
COPY node_versions (id, logical_node_id, thread_id, branch_id, version_no, content, content_sha256,
                    initial_status) FROM STDIN

-- copy_option_sets --
-- A record's propositions (its options, or its distinct free answers: one question's
-- answers) are one alternative set (revision 0040).
COPY option_sets (id, thread_id, origin, actor) FROM STDIN

-- copy_option_set_members --
-- Each proposition of the record as an option of its set (a free answer has no label).
COPY option_set_members (logical_node_id, option_set_id, thread_id, label, ordinal) FROM STDIN

-- copy_imported_runs --
-- One run per turn, of mode imported: finished as it was recorded, never run by Council.
COPY agent_runs (id, thread_id, agent, model, provider, simulated, parent_run_id, round, mode, status,
                 input_fingerprint, started_at, finished_at) FROM STDIN

-- copy_imported_turns --
-- Each run's provenance: the file (by its import), the record and the turn.
COPY imported_turns (run_id, import_id, record_id, turn_index, debate_round, stated_confidence, saw_given,
                     turn_text) FROM STDIN

-- copy_imported_propositions --
-- What each imported node stands for: its option label and text, or its free answer.
COPY imported_propositions (node_version_id, thread_id, key, ordinal, label, body) FROM STDIN

-- copy_claims --
-- Each turn's stance: endorse the node it answered, or abstain on every node (no answer).
COPY claims (id, run_id, node_version_id, claim_type, confidence, rationale) FROM STDIN

-- copy_exposures --
-- What each turn had seen: the stances of the turns it saw.
COPY run_exposures (run_id, kind, channel, exposed_to_run_id, claim_id, node_version_id) FROM STDIN

-- copy_resolutions --
-- A record's truth, as a resolution of each of its nodes.
COPY resolutions (node_version_id, thread_id, outcome, source, reason, actor) FROM STDIN

-- copy_events --
-- The import's events: one per thread, one per claim (claim.added, as every claim has).
COPY events (thread_id, kind, subject_id, actor, payload) FROM STDIN

-- grouping_params --
-- A grouping algorithm's parameters (the independence rules the council's decisions use).
SELECT params FROM grouping_algorithms WHERE id = :id

-- resolution_target --
-- The node version a resolution decides, and its thread.
SELECT v.id, v.thread_id FROM node_versions v WHERE v.id = :version_id

-- resolution_insert --
-- An outside fact deciding a node version; the latest of a version is in force.
INSERT INTO resolutions (node_version_id, thread_id, outcome, source, reason, actor)
VALUES (:version_id, :thread_id, :outcome, :source, :reason, :actor)
RETURNING id, node_version_id, thread_id, outcome, source, reason, actor, created_at

-- resolution_previous --
-- The resolution in force before a new one (which it supersedes), if any.
SELECT id, outcome FROM council_v_resolutions WHERE node_version_id = :version_id AND in_force

-- eval_threads --
-- The threads `council eval` reads: those with a resolution, narrowed by --thread and
-- --tag (an imported record's tags), in a stable order.
SELECT t.id::text AS id
FROM threads t
WHERE EXISTS (SELECT 1 FROM resolutions r WHERE r.thread_id = t.id)
  AND (cardinality(CAST(:thread_ids AS uuid[])) = 0 OR t.id = ANY (CAST(:thread_ids AS uuid[])))
  AND (cardinality(CAST(:tags AS text[])) = 0 OR EXISTS (
        SELECT 1 FROM imported_threads i WHERE i.thread_id = t.id AND i.tags && CAST(:tags AS text[])))
ORDER BY t.id

-- eval_counts --
-- How many threads the selection covers at all, resolved or not (`records`).
SELECT count(*) AS n
FROM threads t
WHERE (cardinality(CAST(:thread_ids AS uuid[])) = 0 OR t.id = ANY (CAST(:thread_ids AS uuid[])))
  AND (cardinality(CAST(:tags AS text[])) = 0 OR EXISTS (
        SELECT 1 FROM imported_threads i WHERE i.thread_id = t.id AND i.tags && CAST(:tags AS text[])))

-- eval_runs --
-- The runs of the threads in turn order (an imported run's turn index, else round then
-- creation), with what the figures need; a control run names the run it controls. Whose
-- stance each had seen and the evidence it cited come as arrays on its row (by the run
-- indexes of run_exposures and citations): 10,000 records hold 120,000 runs and three
-- times as many exposures, which as rows of their own cost more to sort, send and read.
SELECT r.id::text AS id, r.thread_id::text AS thread_id, r.agent, r.provider, r.model,
       r.parent_run_id::text AS parent_run_id,
       -- a list of strings, as text[]: the client parses an array far faster than JSON
       ARRAY(SELECT jsonb_array_elements_text(
           CASE jsonb_typeof(r.input_fingerprint) WHEN 'array' THEN r.input_fingerprint END
       )) AS input_fingerprint,
       ARRAY(SELECT DISTINCT e.exposed_to_run_id::text FROM run_exposures e
             WHERE e.run_id = r.id AND e.exposed_to_run_id IS NOT NULL ORDER BY 1) AS saw,
       ARRAY(SELECT DISTINCT c.evidence_id::text FROM citations c
             WHERE c.run_id = r.id ORDER BY 1) AS cited,
       (r.usage ->> 'prompt_tokens')::bigint AS prompt_tokens,
       (r.usage ->> 'completion_tokens')::bigint AS completion_tokens,
       r.cost_usd, it.run_id IS NOT NULL AS imported, it.stated_confidence,
       r.control_of::text AS control_of
FROM agent_runs r
LEFT JOIN imported_turns it ON it.run_id = r.id
WHERE r.thread_id = ANY (CAST(:thread_ids AS uuid[])) AND r.mode <> 'review'
ORDER BY r.thread_id, it.turn_index NULLS LAST, r.round, r.created_at, r.id

-- eval_claims --
-- The claims of those runs.
SELECT c.run_id::text AS run_id, c.node_version_id::text AS node_version_id, c.claim_type,
       c.confidence::float8 AS confidence
FROM claims c JOIN agent_runs r ON r.id = c.run_id
WHERE r.thread_id = ANY (CAST(:thread_ids AS uuid[])) AND r.mode <> 'review'
ORDER BY c.run_id, c.node_version_id

-- eval_exposures --
-- Whose stance each run had seen (a recorded debate's export).
SELECT DISTINCT e.run_id::text AS run_id, e.exposed_to_run_id::text AS exposed_to_run_id
FROM run_exposures e JOIN agent_runs r ON r.id = e.run_id
WHERE r.thread_id = ANY (CAST(:thread_ids AS uuid[])) AND e.exposed_to_run_id IS NOT NULL
ORDER BY 1, 2

-- eval_resolutions --
-- The resolution in force of each resolved node of the threads.
SELECT thread_id::text AS thread_id, node_version_id::text AS node_version_id, outcome
FROM council_v_resolutions
WHERE thread_id = ANY (CAST(:thread_ids AS uuid[])) AND in_force
ORDER BY thread_id, node_version_id

-- export_thread --
-- A thread as a recorded debate: its question, and the record it came from if imported.
SELECT t.id::text AS id, t.objective, i.record_id, i.tags, coalesce(i.labelled, true) AS labelled
FROM threads t LEFT JOIN imported_threads i ON i.thread_id = t.id
WHERE t.id = :thread_id

-- export_propositions --
-- Its propositions: each logical node's head version, with the option or answer an
-- imported node stands for, in the record's order (else in creation order).
SELECT v.id::text AS id, v.content, p.key, p.label, p.body
FROM logical_nodes n
JOIN node_versions v ON v.id = n.head_version_id
LEFT JOIN imported_propositions p ON p.node_version_id = v.id
WHERE n.thread_id = :thread_id
ORDER BY p.ordinal NULLS LAST, v.created_at, v.id

-- export_runs --
-- Its turns: the runs in turn order, with what an imported turn recorded (a control run
-- is no turn of the debate).
SELECT r.id::text AS id, r.agent, r.model, r.provider, r.round, it.debate_round, it.stated_confidence,
       it.saw_given, it.turn_text, it.run_id IS NOT NULL AS imported
FROM agent_runs r
LEFT JOIN imported_turns it ON it.run_id = r.id
WHERE r.thread_id = :thread_id AND r.mode <> 'review' AND r.control_of IS NULL
ORDER BY it.turn_index NULLS LAST, r.round, r.created_at, r.id
