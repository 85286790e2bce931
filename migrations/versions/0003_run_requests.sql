-- Council ledger, revision 0003: what a run sent, kept whole (docs/architecture.md §7).
--
-- "Hash what you sent": the canonical request (model, messages, parameters —
-- never a key) is stored write-once beside its SHA-256 before the call, so a
-- redelivered or retried attempt re-sends exactly the same request instead of
-- recompiling a different one, and an audit can read what the model was shown.
ALTER TABLE agent_runs ADD COLUMN request jsonb;

DROP TRIGGER agent_runs_guard ON agent_runs;
CREATE TRIGGER agent_runs_guard BEFORE UPDATE ON agent_runs FOR EACH ROW
    EXECUTE FUNCTION council_guard_update_v1(
        'status', 'attempt', 'lease_owner', 'lease_expires_at', 'usage', 'cost_usd',
        'error', 'lint_findings', 'started_at', 'finished_at',
        'once:request_sha256', 'once:input_fingerprint', 'once:request');

-- One run per agent and round of a dispatch: creating the next round is
-- idempotent when several workers finish the last runs of a round at once.
CREATE UNIQUE INDEX agent_runs_dispatch_round_agent ON agent_runs (dispatch_id, round, agent)
    WHERE dispatch_id IS NOT NULL;

-- The request hash and the stored request go together.
ALTER TABLE agent_runs ADD CONSTRAINT agent_runs_request_hashed
    CHECK ((request IS NULL) = (request_sha256 IS NULL));
