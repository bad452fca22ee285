-- wimro schema, version 11: retries are events (issue 30, point 8).
--
-- An action that failed with a retryable error and runs again later keeps
-- its status (SCHEDULED), so it made no event: with a controller refusing
-- connections, a client following the stream saw nothing for minutes while
-- the log had a line per retry. The outcome of a retry now writes an event
-- in the same statement, with the attempt it was (the runs of the action
-- that reached the controller, vim_wim_actions.attempts after it) and when
-- the next one is due. Both are NULL on every other event.

-- +goose Up
ALTER TABLE instance_action_events ADD COLUMN attempt integer, ADD COLUMN next_try_at timestamptz;

-- +goose Down
ALTER TABLE instance_action_events DROP COLUMN attempt, DROP COLUMN next_try_at;
