-- Council ledger, revision 0005: a not-ready evaluation records its manifest (docs/architecture.md §4).
--
-- A node that keeps collecting claims is evaluated again after every run that
-- claims on it, and each not-ready evaluation used to store its whole snapshot
-- (every claim, run, exposure and citation with its fields, the rule set's
-- body): the table grew with claims × evaluations, some fifty times faster than
-- the claims themselves. Replay needs only the ids of the rows the snapshot was
-- built from (it re-reads them) and the stored hash; the SHA-256 of each
-- top-level section lets it still say which part of a rebuilt snapshot differs.
-- Rows written before this revision keep their snapshot and replay as before.
-- Consolidations keep their whole snapshot: materiality re-evaluates it.
ALTER TABLE consolidation_evaluations ALTER COLUMN snapshot DROP NOT NULL;
ALTER TABLE consolidation_evaluations ADD COLUMN manifest jsonb;
ALTER TABLE consolidation_evaluations ADD COLUMN section_sha256 jsonb;
ALTER TABLE consolidation_evaluations ADD CONSTRAINT consolidation_evaluations_replayable
    CHECK (snapshot IS NOT NULL OR (manifest IS NOT NULL AND section_sha256 IS NOT NULL));
