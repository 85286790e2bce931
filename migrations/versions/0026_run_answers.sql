-- Every answer kept (docs/architecture.md §7): the text each call of a run returned (the answer, each tool
-- round, the re-prompt), stored once by the SHA-256 of its full text, bounded in size with
-- its original byte length and whether it was cut. Both tables are immutable.
CREATE TABLE answer_texts (
    sha256 text PRIMARY KEY CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    body text NOT NULL,
    byte_length integer NOT NULL CHECK (byte_length >= 0),
    truncated boolean NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
COMMENT ON TABLE answer_texts IS
    'A text a model or agent CLI returned, once per SHA-256 of its full text; body is cut at the bound when truncated';

CREATE TABLE run_answers (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    run_id uuid NOT NULL REFERENCES agent_runs (id),
    attempt integer NOT NULL CHECK (attempt >= 1),
    round integer NOT NULL CHECK (round >= 0),
    answer_sha256 text NOT NULL REFERENCES answer_texts (sha256),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (run_id, attempt, round)
);
COMMENT ON TABLE run_answers IS
    'The text one round of a run attempt returned (0 = first call; later = tool or re-prompt rounds)';
CREATE INDEX run_answers_sha_idx ON run_answers (answer_sha256);

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['answer_texts', 'run_answers'] LOOP
        EXECUTE format('CREATE TRIGGER %I BEFORE UPDATE OR DELETE ON %I '
                       'FOR EACH ROW EXECUTE FUNCTION council_refuse_mutation_v1()', t || '_immutable', t);
        EXECUTE format('CREATE TRIGGER %I BEFORE TRUNCATE ON %I '
                       'FOR EACH STATEMENT EXECUTE FUNCTION council_refuse_mutation_v1()', t || '_no_truncate', t);
    END LOOP;
END;
$$;

GRANT SELECT, INSERT ON answer_texts, run_answers TO council_app;
