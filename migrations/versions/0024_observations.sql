-- Council ledger, revision 0024: observing real disagreement (docs/architecture.md §4 and §13, docs/guide/observe.md).
--
-- Recorded debates are imported as threads whose runs are of mode 'imported':
-- each turn of a debate is a run, never shown as run by Council, whose
-- provenance (the file's SHA-256, the record's id, the turn's index) is kept
-- here. A file is imported once: its SHA-256 is unique, so importing it again
-- writes nothing. A resolution is an outside fact that decides a node version
-- true or false (actor, source, reason, time); resolutions are appended, never
-- edited, and the latest one of a version is in force (the view says which
-- earlier ones it superseded).
ALTER TABLE agent_runs DROP CONSTRAINT agent_runs_mode_check;
ALTER TABLE agent_runs ADD CONSTRAINT agent_runs_mode_check
    CHECK (mode IN ('external', 'independent', 'deliberative', 'review', 'imported'));

CREATE TABLE debate_imports (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    file_sha256 text NOT NULL UNIQUE CHECK (file_sha256 ~ '^[0-9a-f]{64}$'),
    format text NOT NULL CHECK (format IN ('council-debate-v1', 'du-debate')),
    file_name text NOT NULL,
    records integer NOT NULL CHECK (records >= 0),
    turns integer NOT NULL CHECK (turns >= 0),
    actor text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
COMMENT ON TABLE debate_imports IS
    'A recorded-debate file imported once (its SHA-256 is unique): which format, how many records and turns';

CREATE TABLE imported_threads (
    thread_id uuid PRIMARY KEY REFERENCES threads (id),
    import_id uuid NOT NULL REFERENCES debate_imports (id),
    record_id text NOT NULL CHECK (length(record_id) BETWEEN 1 AND 200),
    tags text[] NOT NULL DEFAULT '{}',
    labelled boolean NOT NULL,
    UNIQUE (import_id, record_id)
);
COMMENT ON TABLE imported_threads IS 'The thread an imported record became, with the record''s id and tags';
CREATE INDEX imported_threads_tags_idx ON imported_threads USING gin (tags);

CREATE TABLE imported_turns (
    run_id uuid PRIMARY KEY REFERENCES agent_runs (id),
    import_id uuid NOT NULL REFERENCES debate_imports (id),
    record_id text NOT NULL,
    turn_index integer NOT NULL CHECK (turn_index >= 0),
    debate_round integer NOT NULL CHECK (debate_round >= 0),
    stated_confidence double precision CHECK (stated_confidence BETWEEN 0 AND 1),
    saw_given boolean NOT NULL DEFAULT false,
    turn_text text,
    UNIQUE (import_id, record_id, turn_index)
);
COMMENT ON TABLE imported_turns IS
    'The provenance of an imported run: the file (by its import), the record and the turn it was';

CREATE TABLE imported_propositions (
    node_version_id uuid PRIMARY KEY REFERENCES node_versions (id),
    thread_id uuid NOT NULL REFERENCES threads (id),
    key text NOT NULL,
    ordinal integer NOT NULL CHECK (ordinal >= 0),
    label text NOT NULL,
    body text NOT NULL,
    UNIQUE (thread_id, key)
);
COMMENT ON TABLE imported_propositions IS
    'The option (label, text) or free answer an imported node stands for, so a record exports as it came';

CREATE TABLE resolutions (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    node_version_id uuid NOT NULL REFERENCES node_versions (id),
    thread_id uuid NOT NULL REFERENCES threads (id),
    outcome boolean NOT NULL,
    source text NOT NULL CHECK (length(btrim(source)) BETWEEN 1 AND 500),
    reason text NOT NULL CHECK (length(btrim(reason)) BETWEEN 1 AND 2000),
    actor text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
COMMENT ON TABLE resolutions IS
    'An outside fact deciding a node version true or false; the latest of a version is in force';
CREATE INDEX resolutions_version_idx ON resolutions (node_version_id, created_at, id);
CREATE INDEX resolutions_thread_idx ON resolutions (thread_id);

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['debate_imports', 'imported_threads', 'imported_turns', 'imported_propositions',
                             'resolutions'] LOOP
        EXECUTE format('CREATE TRIGGER %I BEFORE UPDATE OR DELETE ON %I '
                       'FOR EACH ROW EXECUTE FUNCTION council_refuse_mutation_v1()', t || '_immutable', t);
        EXECUTE format('CREATE TRIGGER %I BEFORE TRUNCATE ON %I '
                       'FOR EACH STATEMENT EXECUTE FUNCTION council_refuse_mutation_v1()', t || '_no_truncate', t);
    END LOOP;
END;
$$;

-- Every resolution with whether it is in force, and which later one superseded it.
CREATE VIEW council_v_resolutions AS
SELECT r.id, r.thread_id, r.node_version_id, r.outcome, r.source, r.reason, r.actor, r.created_at,
       lead(r.id) OVER w IS NULL AS in_force,
       lead(r.id) OVER w AS superseded_by
FROM resolutions r
WINDOW w AS (PARTITION BY r.node_version_id ORDER BY r.created_at, r.id);

GRANT SELECT, INSERT ON debate_imports, imported_threads, imported_turns, imported_propositions, resolutions
    TO council_app;
GRANT SELECT ON council_v_resolutions TO council_app, council_dashboard;
