-- Council ledger, revision 0039: the council protocol and simultaneous rounds (issue 43;
-- docs/architecture.md §7).
--
-- A dispatch of mode 'council' runs round 1 (each agent proposes, blind), round 2 (each
-- agent judges every proposition it did not originate, blind: propositions are shown
-- without author or stance) and rounds 3+ (deliberative: the previous round's stances are
-- shown and recorded as exposures). Control runs pair the rounds that are shown stances:
-- round 2 on of a deliberative dispatch, round 3 on of a council.
--
-- A round is simultaneous: its shared briefing (the thread as it stood when the round
-- opened: the blind packet, the previous round's stances, a review's proposal) is compiled
-- once, when the round opens, and stored by its SHA-256 (round_briefings); dispatch_rounds
-- names it for the dispatch's round. Every run of the round compiles its request from it
-- plus its own agent, so what a round is shown never depends on which worker took which
-- run first. Both tables are immutable.
--
-- A question asked on an existing thread (`council ask --thread`) is its event
-- 'thread.question_asked'; every later briefing carries the thread's questions, read by
-- the partial index below.

ALTER TABLE dispatches DROP CONSTRAINT dispatches_mode_check;
ALTER TABLE dispatches ADD CONSTRAINT dispatches_mode_check
    CHECK (mode IN ('independent', 'deliberative', 'review', 'council'));
ALTER TABLE agent_runs DROP CONSTRAINT agent_runs_mode_check;
ALTER TABLE agent_runs ADD CONSTRAINT agent_runs_mode_check
    CHECK (mode IN ('external', 'independent', 'deliberative', 'review', 'imported', 'council'));

ALTER TABLE dispatches DROP CONSTRAINT dispatches_controls_deliberative;
ALTER TABLE dispatches ADD CONSTRAINT dispatches_controls_deliberative
    CHECK (NOT controls OR mode IN ('deliberative', 'council'));
ALTER TABLE agent_runs DROP CONSTRAINT agent_runs_control_in_a_later_round;
ALTER TABLE agent_runs ADD CONSTRAINT agent_runs_control_in_a_later_round
    CHECK (control_of IS NULL OR (dispatch_id IS NOT NULL
           AND ((mode = 'deliberative' AND round >= 2) OR (mode = 'council' AND round >= 3))));

CREATE TABLE round_briefings (
    sha256 text PRIMARY KEY CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    body jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
COMMENT ON TABLE round_briefings IS
    'The shared part of a round''s briefing (blind packet, previous stances, proposal), once per SHA-256 of its canonical JSON';

CREATE TABLE dispatch_rounds (
    dispatch_id uuid NOT NULL REFERENCES dispatches (id),
    round integer NOT NULL CHECK (round BETWEEN 1 AND 20),
    briefing_sha256 text NOT NULL REFERENCES round_briefings (sha256),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (dispatch_id, round)
);
COMMENT ON TABLE dispatch_rounds IS
    'The shared briefing every run of a dispatch''s round is compiled from, stored when the round opened';
CREATE INDEX dispatch_rounds_briefing_idx ON dispatch_rounds (briefing_sha256);

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['round_briefings', 'dispatch_rounds'] LOOP
        EXECUTE format('CREATE TRIGGER %I BEFORE UPDATE OR DELETE ON %I '
                       'FOR EACH ROW EXECUTE FUNCTION council_refuse_mutation_v1()', t || '_immutable', t);
        EXECUTE format('CREATE TRIGGER %I BEFORE TRUNCATE ON %I '
                       'FOR EACH STATEMENT EXECUTE FUNCTION council_refuse_mutation_v1()', t || '_no_truncate', t);
    END LOOP;
END;
$$;

CREATE INDEX events_question_asked_idx ON events (thread_id, id) WHERE kind = 'thread.question_asked';

GRANT SELECT, INSERT ON round_briefings, dispatch_rounds TO council_app;
