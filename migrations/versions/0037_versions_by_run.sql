-- Council ledger, revision 0037: node versions by the run that made them
-- (docs/guide/agent-runs.md, Automatic consolidation).
--
-- A dispatch's runs are evaluated once a round: the run that closes a round reads the
-- versions its runs claimed on (claims by run_id, indexed by their unique key) and the
-- versions they made, which this index finds without scanning node_versions.

CREATE INDEX node_versions_created_by_run_idx ON node_versions (created_by_run_id)
    WHERE created_by_run_id IS NOT NULL;
