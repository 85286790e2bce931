-- store_round_briefing --
-- Store the shared briefing of a dispatch's round when the round opens: the body once by
-- the SHA-256 of its canonical JSON, and the round's row naming it. A round opened twice
-- (two runs closing the round before it, a sweep, an old dispatch's first claim) keeps the
-- first: the row is never replaced. Returns the SHA-256 the round names now (the one just
-- stored, or NULL when another transaction stored the round's first; read it with
-- round_briefing).
WITH body_kept AS (
    INSERT INTO round_briefings (sha256, body)
    VALUES (:sha256, CAST(:body AS jsonb))
    ON CONFLICT (sha256) DO NOTHING
)
INSERT INTO dispatch_rounds (dispatch_id, round, briefing_sha256)
VALUES (:dispatch_id, :round, :sha256)
ON CONFLICT (dispatch_id, round) DO NOTHING
RETURNING briefing_sha256

-- round_briefing --
-- The shared briefing every run of a dispatch's round is compiled from (none: the round
-- was opened before revision 0039 stored briefings).
SELECT d.briefing_sha256 AS sha256, b.body
FROM dispatch_rounds d JOIN round_briefings b ON b.sha256 = d.briefing_sha256
WHERE d.dispatch_id = :dispatch_id AND d.round = :round

-- lineage_versions --
-- The node versions a run's own lineage made (every ancestor along parent_run_id, the
-- run itself excluded): in a council's cross-review, the propositions a run is not asked
-- to judge, and is told are its own. Its lineage is linked to it by parentage already, so
-- being told this is no exposure to another run's stance.
WITH RECURSIVE lineage (id, depth) AS (
    SELECT r.parent_run_id, 1 FROM agent_runs r WHERE r.id = :run_id AND r.parent_run_id IS NOT NULL
    UNION ALL
    SELECT r.parent_run_id, l.depth + 1
    FROM lineage l JOIN agent_runs r ON r.id = l.id
    WHERE r.parent_run_id IS NOT NULL AND l.depth < 20
)
SELECT v.id FROM node_versions v
WHERE v.created_by_run_id IN (SELECT id FROM lineage)
ORDER BY v.created_at, v.id

-- dispatch_round_facts --
-- What opening a dispatch's round needs to know of the dispatch: its thread, mode and
-- the proposal a review votes on.
SELECT thread_id, mode, proposal_id FROM dispatches WHERE id = :dispatch_id

-- round_heads --
-- The propositions a dispatch's round's shared briefing showed, in order: what a council's
-- cross-review run must judge, less its own lineage's (lineage_versions).
SELECT h.value ->> 'version_id' AS version_id
FROM dispatch_rounds d
JOIN round_briefings b ON b.sha256 = d.briefing_sha256
CROSS JOIN LATERAL jsonb_array_elements(b.body -> 'packet' -> 'heads') WITH ORDINALITY AS h(value, n)
WHERE d.dispatch_id = :dispatch_id AND d.round = :round
ORDER BY h.n
