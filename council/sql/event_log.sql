-- append_event --
-- One event, in the caller's transaction (every store writes its events so).
INSERT INTO events (kind, actor, thread_id, subject_id, payload)
VALUES (:kind, :actor, :thread_id, :subject_id, CAST(:payload AS jsonb))
RETURNING id

-- append_events --
-- Events of one kind (JSON array :items of subject_id and payload), one statement;
-- their ids are taken in the array's order.
INSERT INTO events (kind, actor, thread_id, subject_id, payload)
SELECT CAST(:kind AS text), CAST(:actor AS text), CAST(:thread_id AS uuid), i.value ->> 'subject_id',
       i.value -> 'payload'
FROM jsonb_array_elements(CAST(:items AS jsonb)) WITH ORDINALITY AS i(value, n)
ORDER BY i.n
RETURNING id

-- events_of_thread --
-- A thread's events in order after :after, at most :limit (NULL: all of them).
SELECT id, thread_id, kind, subject_id, actor, payload, created_at FROM events
WHERE thread_id = :thread_id AND id > :after
ORDER BY id
LIMIT :limit

-- claim_events_on --
-- The claim.added events of a thread naming one of the :version_ids, in log order.
SELECT id, thread_id, kind, subject_id, actor, payload, created_at FROM events
WHERE thread_id = :thread_id AND kind = 'claim.added'
  AND (payload ->> 'node_version_id') = ANY(CAST(:version_ids AS text[]))
ORDER BY id
