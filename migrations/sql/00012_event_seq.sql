-- wimro schema, version 12: event streams in commit order, woken by NOTIFY
-- (issue 30, point 9).
--
-- Version 6 made a reader show only the events of transactions older than
-- every transaction still running (pg_snapshot_xmin): safe, but any long
-- transaction on the server, even one that never touches wimro's tables
-- (an operator's idle psql session), stopped every stream.
--
-- Now an event is written with no number (seq NULL), and a reader numbers
-- the committed events of its instance action before it reads them
-- (persistence.ReadEvents): in a transaction of its own, under the
-- instance action's advisory lock, it gives every visible unnumbered
-- event the next numbers, and commits. Numbering transactions of one
-- instance action run one at a time, each seeing the last one's numbers
-- (PostgreSQL releases the lock after the commit is visible), so a
-- snapshot that sees seq n sees every seq below n: a reader following
-- "seq > last" never skips an event that commits late (it is numbered
-- after everything numbered before it became visible), never sees one
-- twice, and waits for no transaction at all. Writers never wait for each
-- other nor for readers (an insert, as before; two outcome batches of one
-- instance action still do not queue, issue 16). Numbering is the only
-- write a stream makes, once per event.
--
-- A trigger sends NOTIFY wimro_events with the instance action's uuid
-- (persistence.ChannelEvents), but only while some process follows it (a
-- row of instance_action_watches, unexpired, written by
-- persistence.WatchEvents when a process opens its first stream of the
-- instance action): PostgreSQL serializes the commits of every
-- transaction that notified (it holds one lock from before the commit to
-- after it), and notifying every event cost about 45% of the outcome
-- throughput of 100 accounts finishing into one instance action.
-- PostgreSQL delivers a notification at commit, once per uuid and
-- transaction, to each process's single listener, which wakes the streams
-- that follow the instance action. A writer that checked the watches just
-- before a watch was written and commits after the stream's first read
-- sends nothing: the stream's safety poll (5 s) reads its event. Every
-- writer of events, now and later, is covered without saying so.
--
-- Existing events are numbered in the order version 6 read them (xid, id).

-- +goose Up
-- Which processes (owner: a per-process id) follow an instance action's
-- events, until when (renewed while they do; a dead process's rows
-- expire).
CREATE TABLE instance_action_watches (
    instance_action_id uuid NOT NULL,
    owner              text NOT NULL,
    expires_at         timestamptz NOT NULL,
    PRIMARY KEY (instance_action_id, owner)
);
ALTER TABLE instance_action_events ADD COLUMN seq bigint;
UPDATE instance_action_events e SET seq = n.seq
FROM (SELECT id, row_number() OVER (PARTITION BY instance_action_id ORDER BY xid, id) AS seq FROM instance_action_events) n
WHERE e.id = n.id;
DROP INDEX instance_action_events_stream_idx;
CREATE UNIQUE INDEX instance_action_events_seq_idx ON instance_action_events (instance_action_id, seq);
-- The events a reader has to number.
CREATE INDEX instance_action_events_unnumbered_idx ON instance_action_events (instance_action_id, id) WHERE seq IS NULL;

-- Once per statement (an outcome batch writes many events), not per row:
-- a plpgsql call per row cost more than the rest of an event's insert.
-- +goose StatementBegin
CREATE FUNCTION wimro_event_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('wimro_events', i.id::text)
    FROM (SELECT DISTINCT instance_action_id AS id FROM inserted) i
    WHERE EXISTS (SELECT 1 FROM instance_action_watches w WHERE w.instance_action_id = i.id AND w.expires_at > now());
    RETURN NULL;
END $$;
-- +goose StatementEnd

CREATE TRIGGER instance_action_events_notify AFTER INSERT ON instance_action_events
    REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION wimro_event_notify();

-- +goose Down
DROP TRIGGER instance_action_events_notify ON instance_action_events;
DROP FUNCTION wimro_event_notify();
DROP INDEX instance_action_events_unnumbered_idx;
DROP INDEX instance_action_events_seq_idx;
CREATE INDEX instance_action_events_stream_idx ON instance_action_events (instance_action_id, xid, id);
ALTER TABLE instance_action_events DROP COLUMN seq;
DROP TABLE instance_action_watches;
