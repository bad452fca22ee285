-- wimro schema, version 14: accountable access (issue 39).
--
-- - api_audit: the audit trail of the API, one row per request that
--   changes something and per request refused for its credentials (401,
--   403): when, which token (its id, never the token), from where, the
--   method and route pattern, the ids it touched, its status. Appended by
--   every wimd, read by GET /openmano/audit (admin scope), purged by the
--   leader's retention chore once older than --audit-retention, oldest
--   first through api_audit_at_idx.
-- - secret_key_holders: the ids of the secret keys each wimd process
--   holds (never a key), refreshed while it runs, so that wimd rekey can
--   tell that every live member opens with the new key before it re-seals
--   the stored secrets with it, and seals with it before the old key is
--   retired.
-- - wimro_touch_modified_at: a row re-sealed by wimd rekey keeps its
--   modified_at. The re-seal is no edit, and the engine takes a changed
--   modified_at for a concurrent edit (an account or WIM edit racing the
--   re-seal was answered 409 "changed by another request"). Its
--   transactions set wimro.reseal (transaction-local); the trigger
--   function then leaves modified_at as it was.
-- +goose Up
CREATE TABLE api_audit (
    id          bigserial PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT now(),
    token_id    text NOT NULL DEFAULT '',
    client      text NOT NULL DEFAULT '',
    method      text NOT NULL,
    route       text NOT NULL,
    objects     text[] NOT NULL DEFAULT '{}',
    status      integer NOT NULL,
    outcome     text NOT NULL,
    request_id  text NOT NULL DEFAULT ''
);
CREATE INDEX api_audit_at_idx ON api_audit (at);

CREATE TABLE secret_key_holders (
    instance_id     text PRIMARY KEY,
    sealing_key_id  text NOT NULL,
    key_ids         text[] NOT NULL,
    seen_at         timestamptz NOT NULL DEFAULT now()
);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wimro_touch_modified_at() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('wimro.reseal', true) = 'on' THEN
        RETURN NEW;
    END IF;
    NEW.modified_at := now();
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wimro_touch_modified_at() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.modified_at := now();
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
DROP TABLE secret_key_holders;
DROP TABLE api_audit;
