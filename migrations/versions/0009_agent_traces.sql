-- Council ledger, revision 0009: what an agent CLI did, and which evidence it opened (docs/architecture.md §7).
--
-- A run executed by the Codex CLI or Claude Code reads the evidence with its
-- own tools. Its event stream (tool calls, commands, files read, turns, token
-- usage, exit status, the CLI's version) is stored per call of each attempt,
-- bounded in size by the writer; the evidence files it actually opened are
-- taken from that trace — never from the ids its prompt names — and kept as
-- rows, so "relied on" can be set beside "cited". Both tables are append-only.
CREATE TABLE run_traces (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    run_id uuid NOT NULL REFERENCES agent_runs (id),
    attempt integer NOT NULL CHECK (attempt >= 1),
    call integer NOT NULL CHECK (call IN (1, 2)),
    runtime text NOT NULL CHECK (runtime IN ('codex-cli', 'claude-code')),
    cli_version text NOT NULL,
    exit_status integer,
    stopped text CHECK (stopped IN ('deadline', 'turn limit', 'authentication refused')),
    trace jsonb NOT NULL CHECK (jsonb_typeof(trace) = 'object'),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (run_id, attempt, call)
);
COMMENT ON TABLE run_traces IS
    'One agent-CLI call of a run attempt (2 = the re-prompt): its bounded event stream and what was read from it';

CREATE TABLE run_opened_evidence (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    run_id uuid NOT NULL REFERENCES agent_runs (id),
    attempt integer NOT NULL CHECK (attempt >= 1),
    evidence_id uuid NOT NULL REFERENCES evidence (id),
    file text NOT NULL,
    tool text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (run_id, attempt, evidence_id)
);
COMMENT ON TABLE run_opened_evidence IS
    'An evidence file an agent-CLI run opened with its own tool, as its trace shows';
CREATE INDEX run_opened_evidence_evidence_idx ON run_opened_evidence (evidence_id);

CREATE TRIGGER run_traces_immutable BEFORE UPDATE OR DELETE ON run_traces
    FOR EACH ROW EXECUTE FUNCTION council_refuse_mutation_v1();
CREATE TRIGGER run_traces_no_truncate BEFORE TRUNCATE ON run_traces
    FOR EACH STATEMENT EXECUTE FUNCTION council_refuse_mutation_v1();
CREATE TRIGGER run_opened_evidence_immutable BEFORE UPDATE OR DELETE ON run_opened_evidence
    FOR EACH ROW EXECUTE FUNCTION council_refuse_mutation_v1();
CREATE TRIGGER run_opened_evidence_no_truncate BEFORE TRUNCATE ON run_opened_evidence
    FOR EACH STATEMENT EXECUTE FUNCTION council_refuse_mutation_v1();

-- Which evidence did each agent-CLI run open, and which did it cite? One row per
-- (run, evidence) that the run opened or cited, for runs with a trace.
CREATE VIEW council_v_opened_evidence AS
WITH traced AS (
    SELECT DISTINCT run_id FROM run_traces
), opened AS (
    SELECT run_id, evidence_id, min(created_at) AS opened_at
    FROM run_opened_evidence GROUP BY run_id, evidence_id
), cited AS (
    SELECT c.run_id, c.evidence_id, count(*) AS citations
    FROM citations c JOIN traced USING (run_id) GROUP BY c.run_id, c.evidence_id
)
SELECT r.thread_id, r.id AS run_id, r.agent, (r.executor ->> 'runtime') AS runtime,
       coalesce(o.evidence_id, c.evidence_id) AS evidence_id,
       (o.evidence_id IS NOT NULL) AS opened, (c.evidence_id IS NOT NULL) AS cited,
       o.opened_at, coalesce(c.citations, 0) AS citations
FROM opened o
FULL JOIN cited c ON c.run_id = o.run_id AND c.evidence_id = o.evidence_id
JOIN agent_runs r ON r.id = coalesce(o.run_id, c.run_id);

-- The application appends both (council_app, revision 0007); dashboards read the view.
GRANT SELECT, INSERT ON run_traces, run_opened_evidence TO council_app;
GRANT SELECT ON council_v_opened_evidence TO council_app, council_dashboard;
