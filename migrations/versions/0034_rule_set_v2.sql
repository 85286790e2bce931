-- Council ledger, revision 0034: the rule set council-default-v2 is seeded as data by
-- the migration's Python (its body and digest); no DDL changes.
SELECT 1;
