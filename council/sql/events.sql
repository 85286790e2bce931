-- events_tail --
-- A thread's settled events after the position (:after_tx, :after_id), in
-- (tx, id) order, at most :limit (the live stream and `council watch`). Settled:
-- inserted by a transaction older than every transaction still in flight that
-- could append one (tx below council_event_horizon_v1(), revision 0015), so it
-- is committed and visible here, and every event not yet visible will have a tx
-- at or above that horizon: nothing can later land before the last event read. Events from
-- before revision 0015 (tx NULL) count as tx 0. Served by events_thread_tail_idx.
SELECT e.id, e.thread_id, e.kind, e.subject_id, e.actor, e.payload, e.created_at,
       CAST(coalesce(e.tx, '0'::xid8) AS text) AS tx
FROM events e
WHERE e.thread_id = :thread_id
  AND (coalesce(e.tx, '0'::xid8), e.id) > (CAST(:after_tx AS xid8), :after_id)
  AND coalesce(e.tx, '0'::xid8) < council_event_horizon_v1()
ORDER BY coalesce(e.tx, '0'::xid8), e.id
LIMIT :limit

-- events_tail_now --
-- Where a reader that starts "from now" stands: before the settled horizon
-- (everything below it is old), skipping the thread's
-- events at or above it that are already visible (committed before the reader
-- came, but not yet settled: they are not news).
SELECT CAST(h.xmin AS text) AS tx,
       ARRAY(SELECT e.id FROM events e
             WHERE e.thread_id = :thread_id AND e.tx >= h.xmin ORDER BY e.id) AS skip
FROM (SELECT council_event_horizon_v1() AS xmin) AS h

-- events_tail_after --
-- The position of the event :event_id in the tail's (tx, id) order, for a
-- reader resuming after it (SSE Last-Event-ID, ?after=N, `watch --since N`);
-- for an id that names no event, the position of the latest event before it
-- (none: the start). Ids are global, so any event's position is a position of
-- every thread's tail.
SELECT CAST(coalesce(e.tx, '0'::xid8) AS text) AS tx, e.id
FROM events e
WHERE e.id <= :event_id
ORDER BY e.id DESC
LIMIT 1

-- events_settled_threads --
-- The web hub's poll: the threads having events that settled since the horizon
-- :since (the previous poll's; NULL: only the horizon is read), and the new
-- horizon. Every event below it is settled, every later
-- one will be at or above it, so consecutive polls see each event once.
-- Served by events_tx_idx (the range holds only what settled since the last poll).
SELECT CAST(h.xmin AS text) AS horizon,
       ARRAY(SELECT DISTINCT e.thread_id FROM events e
             WHERE e.tx >= CAST(:since AS xid8) AND e.tx < h.xmin AND e.thread_id IS NOT NULL)
           AS threads
FROM (SELECT council_event_horizon_v1() AS xmin) AS h
