-- evidence_row --
-- One evidence item, every column.
SELECT * FROM evidence WHERE id = :evidence_id

-- evidence_threads --
-- The threads an evidence item is in, each with its title there, in the order it joined them.
SELECT thread_id, title FROM thread_evidence WHERE evidence_id = :evidence_id ORDER BY created_at

-- evidence_history --
-- An evidence item's validity history, in order.
SELECT * FROM evidence_transitions WHERE evidence_id = :evidence_id ORDER BY created_at

-- evidence_contents --
-- The stored text (or reference) of each evidence item of :evidence_ids.
SELECT id, content, source_uri FROM evidence WHERE id = ANY(CAST(:evidence_ids AS uuid[]))

-- add_evidence --
-- Store evidence content the first time it is seen anywhere (content-addressed:
-- nothing comes back when its hash is stored already).
INSERT INTO evidence (content_sha256, content, source_kind, source_uri, media_type, byte_size, fetched_at, title)
VALUES (:content_sha256, :content, :source_kind, :source_uri, :media_type, :byte_size, :fetched_at, :title)
ON CONFLICT (content_sha256) DO NOTHING
RETURNING id

-- evidence_of_hash --
-- The evidence item stored with this content hash.
SELECT id FROM evidence WHERE content_sha256 = :content_sha256

-- link_evidence --
-- Attach an evidence item to a thread under a title (nothing comes back when it is attached already).
INSERT INTO thread_evidence (thread_id, evidence_id, title, added_by)
VALUES (:thread_id, :evidence_id, :title, :added_by)
ON CONFLICT DO NOTHING
RETURNING evidence_id

-- thread_evidence_ids --
-- The evidence items attached to a thread.
SELECT evidence_id FROM thread_evidence WHERE thread_id = :thread_id
