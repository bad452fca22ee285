-- wimro schema, version 6: the events of an instance action, and since when
-- a WAN link has its status.
--
-- An event is written in the same statement as the change it reports (a
-- task created, a task's or its link's status changed by an outcome, a
-- link found DOWN by monitoring), so it exists exactly when the change
-- does, whichever process made it. A reader follows one instance action's
-- events in (xid, id) order and reads only events of transactions older
-- than every transaction still running (pg_snapshot_xmin): ids come from a
-- sequence and commit out of order, so "id > last seen" alone could skip
-- an event whose transaction committed after a later one's. Below the
-- snapshot's xmin nothing can appear any more, so a cursor (xid, id) never
-- misses one (persistence/events.go).

-- +goose Up

-- No foreign key: events are history. They are deleted with their
-- instance action by the retention purge, never by a cascade.
CREATE TABLE instance_action_events (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    xid                xid8 NOT NULL DEFAULT pg_current_xact_id(),
    instance_action_id uuid NOT NULL,
    task_index         integer,
    action             text,
    status             text,
    wan_link_id        uuid,
    link_status        text,
    error_msg          text,
    at                 timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX instance_action_events_stream_idx ON instance_action_events (instance_action_id, xid, id);

-- When the link's status last changed. Existing links get the migration's
-- time: what they were doing before is not known.
ALTER TABLE instance_wim_nets ADD COLUMN status_since timestamptz NOT NULL DEFAULT now();

-- +goose Down
ALTER TABLE instance_wim_nets DROP COLUMN status_since;
DROP TABLE instance_action_events;
