-- snapshot_manifests --
-- The ids of every row a consolidation decision on each of :version_ids depends
-- on, chosen in ONE statement (one view of the data under READ COMMITTED), after
-- the node locks are held (council_snapshot_manifests_v1, revision 0044, says what each
-- part is; the committer's read function runs the same). Current states are named by their
-- latest transition row; all named rows are immutable, so reading them later changes nothing.
-- One row per version found: (version_id, manifest, seats, correlation_inputs, rivals).
SELECT * FROM council_snapshot_manifests_v1(CAST(:version_ids AS uuid[]))

-- resolved_error_sums --
-- Per pair of :models, over the resolved node versions both took a stance on: how many,
-- how many times each was in error and how many times both were (council/domain/effective.py;
-- council_resolved_error_sums_v1, revision 0044). Sums, not stances: a decision under
-- min_effective_support reads one row a pair however many records were resolved.
SELECT * FROM council_resolved_error_sums_v1(CAST(:models AS text[]))

-- resolved_errors_of --
-- The error of each of :models on each of :version_ids that is resolved
-- (council_resolved_errors_of_v1, revision 0044): what a decision on one of those
-- versions subtracts, since a version's own resolution never measures its decision.
SELECT * FROM council_resolved_errors_of_v1(CAST(:models AS text[]), CAST(:version_ids AS uuid[]))

-- snapshot_rows --
-- The rows that manifests name (for new snapshots and replay alike; the committer's read
-- function runs the same council_snapshot_rows_v1, revision 0044): :manifests a JSON array
-- of manifests. One row per manifest, (ord, rows), numbered from 1, in order.
SELECT * FROM council_snapshot_rows_v1(CAST(:manifests AS jsonb))

-- snapshot_rival_rows --
-- The rows the rivals of v4 manifests name (council_snapshot_rival_rows_v1, revision 0044):
-- :rivals a JSON array of {ord, rivals}, a manifest's number from 1 and the rivals it names.
-- One row per rival, (ord, no, rows), in order.
SELECT * FROM council_snapshot_rival_rows_v1(CAST(:rivals AS jsonb))

-- quorum_versions --
-- When run :run_id of a dispatch ends, the versions whose council it sat on and whose
-- thread's rule set has min_council_answered (council/domain/quorum.py), not yet
-- consolidated: the versions claimed on by runs of the thread's dispatches (not
-- reviews) that sent the run's agent. Their decision may change with the run's status
-- even when it claimed on none of them (a failure, or a re-run that answers elsewhere).
SELECT DISTINCT c.node_version_id
FROM agent_runs me
JOIN threads th ON th.id = me.thread_id
JOIN rule_sets rs ON rs.id = th.rule_set_id AND rs.body ? 'min_council_answered'
JOIN dispatches d ON d.thread_id = me.thread_id AND d.mode <> 'review' AND me.agent = ANY(d.agents)
JOIN agent_runs r ON r.dispatch_id = d.id AND r.control_of IS NULL
JOIN claims c ON c.run_id = r.id
WHERE me.id = :run_id AND me.dispatch_id IS NOT NULL
  AND NOT EXISTS (
      SELECT 1 FROM consolidations k WHERE k.node_version_id = c.node_version_id AND k.status = 'live')
