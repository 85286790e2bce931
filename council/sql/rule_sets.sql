-- rule_set --
-- One stored rule set, by id (the body a thread pinned to it is decided under).
SELECT id, body, description FROM rule_sets WHERE id = :id

-- pinned_rule_set --
-- The rule set a thread created now is pinned to: the latest pin (none: the default).
SELECT rule_set_id FROM rule_set_pins ORDER BY id DESC LIMIT 1

-- rule_sets_shown --
-- Stored rule sets, oldest first, each with the counterfactual report that motivated
-- it (if any): one (:id) or every one (NULL).
SELECT rs.id, rs.body, rs.body_sha256, rs.description, rs.created_at,
       p.report_sha256, p.thread_id, p.since, p.compared, p.changed, p.created_at AS recorded_at
FROM rule_sets rs
LEFT JOIN rule_set_provenance p ON p.rule_set_id = rs.id
WHERE CAST(:id AS text) IS NULL OR rs.id = CAST(:id AS text)
ORDER BY rs.created_at, rs.id

-- rule_set_sha256 --
-- The body hash a rule set id is stored with, if it is (a change takes a new id).
SELECT body_sha256 FROM rule_sets WHERE id = :id

-- add_rule_set --
-- Store a rule set's body under its id (never edited after).
INSERT INTO rule_sets (id, body, body_sha256, description)
VALUES (:id, CAST(:body AS jsonb), :body_sha256, :description)

-- add_rule_set_provenance --
-- Why it was stored: the counterfactual report that motivated it.
INSERT INTO rule_set_provenance (rule_set_id, report_sha256, thread_id, since, compared, changed, actor)
VALUES (:rule_set_id, :report_sha256, :thread_id, :since, :compared, CAST(:changed AS jsonb), :actor)

-- pin_rule_set --
-- Pin new threads to a stored rule set (threads already open keep theirs).
INSERT INTO rule_set_pins (rule_set_id, actor) VALUES (:rule_set_id, :actor)
