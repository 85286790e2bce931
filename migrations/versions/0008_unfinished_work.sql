-- Council ledger, revision 0008: no work is lost in a fault (docs/architecture.md §5 and §7).
--
-- Work lives in Celery messages, and a message consumed while Postgres is away
-- fails. Its task retries, but a long outage outlasts any retry budget, so the
-- periodic sweep must be able to find, from the ledger alone, every kind of
-- work that was created but never finished. Two kinds needed a record:
--
-- 1. Evaluations. A version needs one when it holds claims that no
--    evaluation or consolidation of it saw. Claims are append-only and every
--    snapshot holds all of its version's claims, so comparing counts is exact
--    (timestamps are not: commit order is not timestamp order). The count an
--    evaluation saw is derived from its manifest (or, before 0005, its
--    snapshot) as a generated column, so no writer changes, and indexed so
--    the sweep reads it without touching the manifests. (Adding the column
--    rewrites the table once.) Consolidations are not given one: their
--    table's update guard compares whole rows in a BEFORE trigger, and a
--    version that was consolidated is rarely an open head again (only after a
--    retraction), so the sweep reads their snapshots' claim counts directly.
ALTER TABLE consolidation_evaluations ADD COLUMN claims_seen integer
    GENERATED ALWAYS AS (jsonb_array_length(coalesce(manifest -> 'claims', snapshot -> 'claims'))) STORED;
CREATE INDEX consolidation_evaluations_claims_seen_idx
    ON consolidation_evaluations (node_version_id, claims_seen);

-- 2. Cascade continuations. A reversal cascade is bounded per step; what a
--    step cuts off (versions still to expand, each with its depth left) is
--    written here in the same transaction as the step, and marked continued
--    in the transaction of the step that continues it. A lost council.cascade
--    message therefore leaves a row the sweep finds, and a duplicated one
--    finds its row already continued and does nothing.
CREATE TABLE cascade_continuations (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    pending jsonb NOT NULL CHECK (jsonb_typeof(pending) = 'array' AND jsonb_array_length(pending) > 0),
    actor text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    continued_at timestamptz
);
COMMENT ON TABLE cascade_continuations IS
    'What a bounded reversal cascade step cut off: [[version_id, depth_left], ...], until a later step continues it';
CREATE INDEX cascade_continuations_unfinished_idx ON cascade_continuations (created_at)
    WHERE continued_at IS NULL;
CREATE TRIGGER cascade_continuations_guard BEFORE UPDATE ON cascade_continuations FOR EACH ROW
    EXECUTE FUNCTION council_guard_update_v1('once:continued_at');
CREATE TRIGGER cascade_continuations_no_delete BEFORE DELETE ON cascade_continuations
    FOR EACH ROW EXECUTE FUNCTION council_refuse_mutation_v1();
CREATE TRIGGER cascade_continuations_no_truncate BEFORE TRUNCATE ON cascade_continuations
    FOR EACH STATEMENT EXECUTE FUNCTION council_refuse_mutation_v1();

-- The application appends continuations and marks them continued (council_app, revision 0007).
GRANT SELECT, INSERT, UPDATE ON cascade_continuations TO council_app;
