-- attempts_of_run --
-- Who ran each attempt of a run: its claimed and ended rows, by attempt.
SELECT attempt, event, worker, status, reason, created_at FROM run_attempts
WHERE run_id = :run_id
ORDER BY attempt

-- add_run_traces --
-- The traces of an attempt's agent-CLI calls (JSON array :traces of call, runtime,
-- cli_version, exit_status, stopped and the stored document), in the array's order.
INSERT INTO run_traces (run_id, attempt, call, runtime, cli_version, exit_status, stopped, trace)
SELECT CAST(:run_id AS uuid), CAST(:attempt AS integer), CAST(t.value ->> 'call' AS integer),
       t.value ->> 'runtime', t.value ->> 'cli_version', CAST(t.value ->> 'exit_status' AS integer),
       t.value ->> 'stopped', t.value -> 'trace'
FROM jsonb_array_elements(CAST(:traces AS jsonb)) WITH ORDINALITY AS t(value, n)
ORDER BY t.n

-- add_opened_evidence --
-- The evidence files an attempt opened (JSON array :opened of evidence_id, file and
-- tool), each once per attempt.
INSERT INTO run_opened_evidence (run_id, attempt, evidence_id, file, tool)
SELECT CAST(:run_id AS uuid), CAST(:attempt AS integer), o.evidence_id, o.file, o.tool
FROM jsonb_to_recordset(CAST(:opened AS jsonb)) AS o(evidence_id uuid, file text, tool text)
ON CONFLICT (run_id, attempt, evidence_id) DO NOTHING

-- traces_of_run --
-- Each agent-CLI call's trace of a run, by attempt and call.
SELECT attempt, call, runtime, cli_version, exit_status, stopped, trace, created_at FROM run_traces
WHERE run_id = :run_id
ORDER BY attempt, call

-- opened_of_run --
-- Every evidence item a run opened or cited, as the dashboard view has it.
SELECT evidence_id, opened, cited, opened_at, citations FROM council_v_opened_evidence
WHERE run_id = :run_id
ORDER BY opened DESC, opened_at, evidence_id

-- keep_answer --
-- What one round of a run attempt returned: the text once by its SHA-256, then the
-- round's row naming it; keeping the same round twice writes nothing (a retried call).
WITH text_kept AS (
    INSERT INTO answer_texts (sha256, body, byte_length, truncated)
    VALUES (:sha256, :body, :byte_length, :truncated)
    ON CONFLICT (sha256) DO NOTHING
)
INSERT INTO run_answers (run_id, attempt, round, answer_sha256)
VALUES (:run_id, :attempt, :round, :sha256)
ON CONFLICT (run_id, attempt, round) DO NOTHING

-- answers_of_run --
-- Every kept round of a run with its text, by attempt and round.
SELECT a.attempt, a.round, a.answer_sha256 AS sha256, x.body AS text, x.byte_length, x.truncated, a.created_at
FROM run_answers a JOIN answer_texts x ON x.sha256 = a.answer_sha256
WHERE a.run_id = :run_id
ORDER BY a.attempt, a.round

-- dispatch_of_key --
-- The dispatch made with an idempotency key and what it asked for (under the key's lock).
SELECT id, request_sha256 FROM dispatches WHERE idempotency_key = :key

-- first_round_of_dispatch --
-- A dispatch's first-round runs in the order its agents were named (:agents).
SELECT id FROM agent_runs
WHERE dispatch_id = :dispatch_id AND round = 1
ORDER BY array_position(CAST(:agents AS text[]), agent)
