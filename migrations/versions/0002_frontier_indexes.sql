-- Council ledger, revision 0002: an index for the reentry packet's frontier
-- query (council/sql/frontier.sql, docs/architecture.md §6). Planned with EXPLAIN (ANALYZE,
-- BUFFERS) on the frontier benchmark (docs/benchmarks.md, "The frontier query").

-- The packet's memory section: a thread's current memory items (stable,
-- provisional or contested), newest first, capped. Without it the query sorts
-- every current item of the thread to keep the first few hundred; with it the
-- items are read in order and the scan stops at the cap.
CREATE INDEX memory_items_thread_current_idx ON memory_items (thread_id, status_changed_at DESC, id)
    WHERE status IN ('stable', 'provisional', 'contested');
