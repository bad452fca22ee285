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

-- +goose Down
DROP TABLE secret_key_holders;
DROP TABLE api_audit;
