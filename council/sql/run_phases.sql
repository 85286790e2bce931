-- begin_run --
-- Claim a run for an attempt and read what its request is compiled from, in one call
-- (council_begin_run_v1, revision 0042): the claim, its round's stored shared briefing and
-- the text of the evidence an API run is given inline, as one document. A run is claimable
-- when it was never started or its lease expired (its worker died or stalled); the attempt
-- number is the fencing token every later write of the attempt presents. The claim records
-- who took the attempt and, on a takeover, that the attempt before ended. A retry of the
-- task whose attempt a transient error cut off names that attempt (:held_attempt) and takes
-- it over at once instead of waiting out the lease: only that task's retry carries the
-- number. The run comes back with what earlier attempts were billed (the new attempt adds
-- to them) and, for a later round, agent_down: the earliest run of the same agent in the
-- dispatch that failed because the agent cannot answer (usage.failure permanent or
-- unreachable). Nothing claimed comes back as a state (done, leased, missing), not an error.
SELECT council_begin_run_v1(
    CAST(:run_id AS uuid), :owner, CAST(:lease_s AS double precision),
    CAST(:held_attempt AS integer), CAST(:api_runtimes AS text[])
) AS document

-- end_run --
-- The writing transaction's first call (council_end_run_v2, revision 0043): keep what round
-- :round of the attempt returned (no answer: :sha256 NULL), whether or not the attempt still
-- owns the run; fence the run (as fence_run); for a run it holds, read the output check's
-- facts of the versions it claims on (:versions) and the evidence it cites (:evidence), and
-- the heads of those versions' rival alternatives (evaluated again after the run).
SELECT council_end_run_v2(
    CAST(:run_id AS uuid), CAST(:attempt AS integer), CAST(:round AS integer), :sha256, :body,
    CAST(:byte_length AS integer), CAST(:truncated AS boolean), CAST(:versions AS uuid[]),
    CAST(:evidence AS uuid[])
) AS document

-- apply_run --
-- Every run's end (council_apply_run_v2, revision 0043): the claims (:claims) and citations
-- (:citations) its writer checked and deferred, then the run's terminal state, its attempt's
-- record and its events (:events, in order); then, for a run of a dispatch, whether its round
-- closed, asked under the dispatch's lock (council_round_state_v1), with what it touched.
SELECT council_apply_run_v2(
    CAST(:run_id AS uuid), CAST(:attempt AS integer), CAST(:claims AS jsonb), CAST(:citations AS jsonb),
    :status, CAST(:usage AS jsonb), CAST(:cost_usd AS double precision), :error,
    CAST(:lint_findings AS jsonb), CAST(:events AS jsonb)
) AS ended
