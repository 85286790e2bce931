-- Council ledger, revision 0007: the application's role, and derived columns that
-- can only follow their history (docs/architecture.md §11).
--
-- The migrations run as the owner of every table; the application (CLI, workers,
-- web) connects as council_app, which owns nothing and is no superuser. Triggers
-- are the ledger's immutability, and only an owner can disable or drop a trigger;
-- only a superuser can SET session_replication_role = replica (which skips them
-- all). So council_app cannot rewrite history: it appends, and updates only what
-- the guards let change.

-- ------------------------------------------------- derived columns, version 2

-- Row-level UPDATE guard, version 2. Arguments name what may change:
--   'col'                          freely mutable (documented operational state)
--   'once:col'                     may be set while NULL, never changed afterwards
--   'history:col:stamp:table:fk'   col and its timestamp stamp follow the transition
--                                  table whose fk names this row, one row at a time,
--                                  in the order the rows were recorded
--   'head:id_col:no_col'           logical_nodes' head: forward only, to a version
--                                  of the same node
-- Every other column is immutable.
--
-- Version 1 let a derived column change whenever it was reached from inside another
-- trigger (pg_trigger_depth() >= 2), so any trigger, a user's on a temporary table
-- included, could set it without a history row. Version 2 asks the history itself,
-- however the UPDATE is reached: (col, stamp) may move from (from_status, its
-- current stamp) to (to_status, created_at) of a transition row only when that row
-- is the next one, recorded at or after the current stamp with none in between. So
-- the column replays its history in order and never diverges from it: an older
-- row cannot be applied again, a backdated one is refused, and a statement that
-- appends two moves of one subject still works (its AFTER triggers run when both
-- rows are already visible).
CREATE FUNCTION council_guard_update_v2() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    o jsonb := to_jsonb(OLD);
    n jsonb := to_jsonb(NEW);
    arg text;
    part text[];
    cols text[];
    mutable text[] := '{}';
    follows boolean;
BEGIN
    FOREACH arg IN ARRAY TG_ARGV LOOP
        part := string_to_array(arg, ':');
        CASE part[1]
        WHEN 'once' THEN
            cols := part[2:2];
            IF (o -> part[2]) <> 'null'::jsonb AND (o -> part[2]) IS DISTINCT FROM (n -> part[2]) THEN
                RAISE EXCEPTION 'council: %.% is write-once', TG_TABLE_NAME, part[2]
                    USING ERRCODE = 'CN001';
            END IF;
        WHEN 'history' THEN
            cols := part[2:3];
            IF (o -> part[2]) IS DISTINCT FROM (n -> part[2]) OR (o -> part[3]) IS DISTINCT FROM (n -> part[3]) THEN
                EXECUTE format(
                    'SELECT EXISTS (SELECT 1 FROM %1$I h WHERE h.%2$I = $1 AND h.from_status = $2 '
                    'AND h.to_status = $3 AND h.created_at = $4 AND h.created_at >= $5 AND NOT EXISTS ('
                    'SELECT 1 FROM %1$I skipped WHERE skipped.%2$I = $1 '
                    'AND skipped.created_at > $5 AND skipped.created_at < $4))',
                    part[4], part[5])
                INTO follows
                USING (o ->> 'id')::uuid, o ->> part[2], n ->> part[2],
                      (n ->> part[3])::timestamptz, (o ->> part[3])::timestamptz;
                IF NOT follows THEN
                    RAISE EXCEPTION 'council: %.% changes only by appending to its history (a transition or version row)',
                        TG_TABLE_NAME, part[2]
                        USING ERRCODE = 'CN001';
                END IF;
            END IF;
        WHEN 'head' THEN
            cols := part[2:3];
            IF (o -> part[2]) IS DISTINCT FROM (n -> part[2]) OR (o -> part[3]) IS DISTINCT FROM (n -> part[3]) THEN
                SELECT EXISTS (
                    SELECT 1 FROM node_versions v
                    WHERE v.logical_node_id = (o ->> 'id')::uuid
                      AND v.id = (n ->> part[2])::uuid AND v.version_no = (n ->> part[3])::int
                      AND (o ->> part[3] IS NULL OR v.version_no > (o ->> part[3])::int))
                INTO follows;
                IF NOT follows THEN
                    RAISE EXCEPTION 'council: %.% changes only by appending to its history (a transition or version row)',
                        TG_TABLE_NAME, part[2]
                        USING ERRCODE = 'CN001';
                END IF;
            END IF;
        ELSE
            cols := ARRAY[arg];
        END CASE;
        mutable := mutable || cols;
        o := o - cols;
        n := n - cols;
    END LOOP;
    IF o <> n THEN
        RAISE EXCEPTION 'council: UPDATE on % is refused: only % may change',
            TG_TABLE_NAME, array_to_string(mutable, ', ')
            USING ERRCODE = 'CN001';
    END IF;
    RETURN NEW;
END;
$$;

-- node_version_states rows, version 2: a row is its version's first state (the
-- status the version was inserted with, at its creation time), whoever inserts it.
-- Version 1 trusted the trigger depth, like council_guard_update_v1.
CREATE FUNCTION council_refuse_direct_insert_v2() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM node_versions v
        WHERE v.id = NEW.id AND v.initial_status = NEW.status AND v.created_at = NEW.status_changed_at
    ) THEN
        RAISE EXCEPTION 'council: rows of % are written only by triggers (a version''s first state)', TG_TABLE_NAME
            USING ERRCODE = 'CN001';
    END IF;
    RETURN NEW;
END;
$$;

-- agent_runs_guard keeps council_guard_update_v1: it names no derived column, and
-- for that version 1 and 2 behave alike.
DROP TRIGGER branches_guard ON branches;
CREATE TRIGGER branches_guard BEFORE UPDATE ON branches FOR EACH ROW
    EXECUTE FUNCTION council_guard_update_v2('history:status:status_changed_at:branch_transitions:branch_id');
DROP TRIGGER logical_nodes_guard ON logical_nodes;
CREATE TRIGGER logical_nodes_guard BEFORE UPDATE ON logical_nodes FOR EACH ROW
    EXECUTE FUNCTION council_guard_update_v2('head:head_version_id:head_version_no');
DROP TRIGGER node_version_states_guard ON node_version_states;
CREATE TRIGGER node_version_states_guard BEFORE UPDATE ON node_version_states FOR EACH ROW
    EXECUTE FUNCTION council_guard_update_v2(
        'history:status:status_changed_at:node_status_transitions:node_version_id');
DROP TRIGGER evidence_guard ON evidence;
CREATE TRIGGER evidence_guard BEFORE UPDATE ON evidence FOR EACH ROW
    EXECUTE FUNCTION council_guard_update_v2(
        'history:validity:validity_changed_at:evidence_transitions:evidence_id');
DROP TRIGGER pending_actions_guard ON pending_actions;
CREATE TRIGGER pending_actions_guard BEFORE UPDATE ON pending_actions FOR EACH ROW
    EXECUTE FUNCTION council_guard_update_v2(
        'history:status:status_changed_at:pending_action_transitions:pending_action_id');
DROP TRIGGER consolidations_guard ON consolidations;
CREATE TRIGGER consolidations_guard BEFORE UPDATE ON consolidations FOR EACH ROW
    EXECUTE FUNCTION council_guard_update_v2(
        'history:status:status_changed_at:consolidation_transitions:consolidation_id');
DROP TRIGGER memory_items_guard ON memory_items;
CREATE TRIGGER memory_items_guard BEFORE UPDATE ON memory_items FOR EACH ROW
    EXECUTE FUNCTION council_guard_update_v2(
        'history:status:status_changed_at:memory_transitions:memory_item_id');
DROP TRIGGER retraction_proposals_guard ON retraction_proposals;
CREATE TRIGGER retraction_proposals_guard BEFORE UPDATE ON retraction_proposals FOR EACH ROW
    EXECUTE FUNCTION council_guard_update_v2(
        'history:status:status_changed_at:retraction_proposal_transitions:proposal_id');
DROP TRIGGER node_version_states_insert_guard ON node_version_states;
CREATE TRIGGER node_version_states_insert_guard BEFORE INSERT ON node_version_states
    FOR EACH ROW EXECUTE FUNCTION council_refuse_direct_insert_v2();

-- A trigger fires whoever holds EXECUTE; only attaching one to a table needs it.
-- Nobody but the owner attaches the ledger's trigger functions to anything.
REVOKE ALL ON FUNCTION
    council_refuse_mutation_v1(), council_guard_update_v1(), council_guard_update_v2(),
    council_apply_transition_v1(), council_node_version_inserted_v1(), council_notify_event_v1(),
    council_refuse_direct_insert_v1(), council_refuse_direct_insert_v2()
FROM PUBLIC;

-- ---------------------------------------------------------- the application

DO $$
BEGIN
    IF current_user = 'council_app' THEN
        RAISE EXCEPTION 'council: run the migrations as the owner of the ledger, not as council_app';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'council_app') THEN
        CREATE ROLE council_app LOGIN;
    END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL;  -- created concurrently by a migration of another database
END;
$$;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'council_app' AND (rolsuper OR rolbypassrls)) THEN
        RAISE EXCEPTION 'council: the role council_app must be neither superuser nor BYPASSRLS';
    END IF;
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO council_app', current_database());
END;
$$;

-- Before PostgreSQL 15 every role may create objects in public; the application
-- creates none (a table it created would be its own, triggers and all).
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO council_app;

-- By name, never ALTER DEFAULT PRIVILEGES: a table a later migration adds is the
-- application's only when that migration says so. No DELETE, no TRUNCATE, no
-- TRIGGER, no REFERENCES: the ledger is appended to.
GRANT SELECT, INSERT ON
    rule_sets, grouping_algorithms, threads, dispatches, agent_runs, branches, branch_transitions,
    logical_nodes, node_versions, node_version_states, node_status_transitions, edges, merges,
    evidence, thread_evidence, evidence_transitions, run_exposures, claims, citations,
    pending_actions, pending_action_transitions, consolidations, consolidation_transitions,
    consolidation_evidence, consolidation_evaluations, memory_items, memory_transitions,
    retraction_proposals, retraction_proposal_transitions, retraction_votes, events, run_attempts
TO council_app;
-- The tables whose guard lets columns change: a worker's run state, and the derived
-- columns the transition triggers move (they run as the role that appends).
GRANT UPDATE ON
    agent_runs, branches, logical_nodes, node_version_states, evidence, pending_actions,
    consolidations, memory_items, retraction_proposals
TO council_app;
-- `council status` reports the revision.
GRANT SELECT ON alembic_version TO council_app;
