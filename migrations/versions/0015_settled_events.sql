-- Council ledger, revision 0015: the event log without NOTIFY, tailed exactly
-- (docs/architecture.md §8).
--
-- Until now every insert into events sent pg_notify from the writer's
-- transaction (trigger events_notify). A transaction that has notified takes
-- the server's one notify-queue lock at commit and holds it through its WAL
-- flush, so every commit that appended an event — a run's end, a
-- consolidation — was serialized with every other one in the database.
-- Live readers now poll instead (council/sql/events.sql): the trigger and its
-- function go.
--
-- Live readers also read "events after the last id seen", which loses an event
-- whose id was drawn before, but committed after, one the reader already took.
-- Each row now records the transaction that inserted it (tx, from
-- pg_current_xact_id()); a reader takes only events whose transaction is older
-- than every transaction still in flight that could append one (below
-- council_event_horizon_v1()), in (tx, id) order, so nothing can later commit
-- before its cursor.
-- Rows inserted before this revision keep tx NULL: settled long ago, ordered
-- first (as tx 0) by id.
--
-- The column is added without a default (no rewrite of the table); the default,
-- volatile, is then set for new rows only.

DROP TRIGGER events_notify ON events;
DROP FUNCTION council_notify_event_v1();

ALTER TABLE events ADD COLUMN tx xid8;
ALTER TABLE events ALTER COLUMN tx SET DEFAULT pg_current_xact_id();

-- The settled horizon of the calling statement's snapshot: the oldest transaction
-- in flight (pg_snapshot_xip) that may be of this database, else the snapshot's
-- xmax. Every event of a transaction below it is committed (or never will be) and
-- visible to the statement; every event not visible to it will have a tx at or
-- above it. A transaction is passed over only when pg_stat_activity shows it in
-- another database (transaction ids are cluster-wide, so a busy neighbour would
-- otherwise hold the stream back); one it does not show — ended since the
-- snapshot, a prepared transaction, a backend not yet listed — counts as ours.
-- STABLE: it reads the statement's own snapshot, as the rows it filters do. Call it
-- in a transaction's first statement that reads pg_stat_activity (each tail read is
-- one): the activity is then copied after the snapshot, so a transaction in that
-- snapshot is never mistaken for the one its backend's slot held before.
-- (A quoted body: a RETURN body would be stored parsed, with the columns of
-- pg_stat_get_activity spelled out, which differ between server versions.)
CREATE FUNCTION council_event_horizon_v1() RETURNS xid8
    LANGUAGE sql STABLE PARALLEL RESTRICTED AS $$
    SELECT coalesce(
        (SELECT min(x) FROM pg_snapshot_xip(c.snap) AS x
         WHERE NOT EXISTS (
             SELECT 1 FROM pg_stat_get_activity(NULL) AS a
             WHERE a.backend_xid IS NOT NULL
               AND CAST(CAST(a.backend_xid AS text) AS bigint) = CAST(CAST(x AS text) AS bigint) % 4294967296
               AND a.datid IS DISTINCT FROM (SELECT d.oid FROM pg_database d
                                             WHERE d.datname = current_database()))),
        pg_snapshot_xmax(c.snap))
    FROM (SELECT pg_current_snapshot() AS snap) AS c
$$;
COMMENT ON FUNCTION council_event_horizon_v1() IS
    'Events of transactions below this are settled: the live tail reads only them (revision 0015)';
REVOKE ALL ON FUNCTION council_event_horizon_v1() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION council_event_horizon_v1() TO council_app;

-- A thread's stream: its settled events after a (tx, id) position.
CREATE INDEX events_thread_tail_idx ON events (thread_id, (coalesce(tx, '0'::xid8)), id);
-- The web hub's poll: which threads have events that settled since its last look.
CREATE INDEX events_tx_idx ON events (tx) WHERE tx IS NOT NULL;
