-- begin_run --
-- Claim a run for an attempt and read what its request is compiled from, in one call
-- (council_begin_run_v1, revision 0044): the claim of claim_run, its round's stored shared
-- briefing and the text of the evidence an API run is given inline, as one document.
-- Nothing claimed comes back as a state (done, leased, missing), not an error.
SELECT council_begin_run_v1(
    CAST(:run_id AS uuid), :owner, CAST(:lease_s AS double precision),
    CAST(:held_attempt AS integer), CAST(:api_runtimes AS text[])
) AS document
