-- wimro schema, version 22: the WAN-link counts by service type (issue 34).
--
-- - wan_link_status_counts.service_type: the triggers of version 13 count
--   the links per (status, service type), so wimro_wan_links_by_status
--   says how many L3VPNs, ELANs and ELINEs are ACTIVE, DOWN or in ERROR.
--   An update that only changes the type (a scale out or in re-records an
--   ELINE as an ELAN or back) moves a link between two counts as a status
--   change does; the rows stay signed deltas, folded per (status, type).
-- - wimro_link_service_type: the type a link is counted as. A link
--   written before version 18 has no recorded type (NULL); it is counted
--   as the runner makes it (actions.ServiceTypeOf): an ELAN when it is
--   multipoint, else an ELINE, the only layer-2 type of its time (no
--   L3VPN existed before version 18). The planner has set multipoint for
--   links over more than two datacenters since version 2, so the rule
--   reads the row alone. The monitor's transitions use the same function.
--
-- The counts are rebuilt from the links table in the transaction that
-- replaces the trigger function, under the tables' lock, so they start
-- exact. The table is recreated rather than altered: its rows are
-- deltas, all replaced by the rebuild, and a column added NOT NULL needs
-- an empty table or a default that would count every older row wrongly.
-- service_type is NOT NULL: a wimd of version 21 left running on this
-- schema (unsupported, docs/operations.md "Upgrade and rollback") fails
-- its fold loudly rather than writing counts of no type.

-- +goose Up
-- Both tables are locked first, in one statement and in the order
-- wimd's statements lock them (a write of the links, then the count its
-- trigger appends): taken one by one as the changes reach them, schema
-- 13's migration deadlocked with a running wimd.
LOCK TABLE instance_wim_nets, wan_link_status_counts IN ACCESS EXCLUSIVE MODE;

-- +goose StatementBegin
CREATE FUNCTION wimro_link_service_type(service_type text, multipoint boolean) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT COALESCE(service_type, CASE WHEN multipoint THEN 'ELAN' ELSE 'ELINE' END) $$;
-- +goose StatementEnd

DROP TABLE wan_link_status_counts;
CREATE TABLE wan_link_status_counts (
    status       text NOT NULL,
    service_type text NOT NULL CHECK (service_type IN ('ELINE', 'ELAN', 'L3VPN')),
    n            bigint NOT NULL
);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wimro_count_link_statuses() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO wan_link_status_counts (status, service_type, n)
        SELECT status, wimro_link_service_type(service_type, multipoint), count(*) FROM new_links GROUP BY 1, 2;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO wan_link_status_counts (status, service_type, n)
        SELECT status, wimro_link_service_type(service_type, multipoint), -count(*) FROM old_links GROUP BY 1, 2;
    ELSE
        INSERT INTO wan_link_status_counts (status, service_type, n)
        SELECT status, typ, sum(d) FROM (
            SELECT status, wimro_link_service_type(service_type, multipoint) AS typ, 1 AS d FROM new_links
            UNION ALL
            SELECT status, wimro_link_service_type(service_type, multipoint), -1 FROM old_links) c
        GROUP BY status, typ HAVING sum(d) <> 0;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

INSERT INTO wan_link_status_counts (status, service_type, n)
SELECT status, wimro_link_service_type(service_type, multipoint), count(*) FROM instance_wim_nets GROUP BY 1, 2;

-- +goose Down
-- Locked first as Up does.
LOCK TABLE instance_wim_nets, wan_link_status_counts IN ACCESS EXCLUSIVE MODE;

-- The function of version 13, as it was written there.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wimro_count_link_statuses() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO wan_link_status_counts (status, n) SELECT status, count(*) FROM new_links GROUP BY status;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO wan_link_status_counts (status, n) SELECT status, -count(*) FROM old_links GROUP BY status;
    ELSE
        INSERT INTO wan_link_status_counts (status, n)
        SELECT status, sum(d) FROM (
            SELECT status, 1 AS d FROM new_links
            UNION ALL
            SELECT status, -1 FROM old_links) c
        GROUP BY status HAVING sum(d) <> 0;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

DROP TABLE wan_link_status_counts;
CREATE TABLE wan_link_status_counts (
    status text NOT NULL,
    n      bigint NOT NULL
);
INSERT INTO wan_link_status_counts (status, n) SELECT status, count(*) FROM instance_wim_nets GROUP BY status;
DROP FUNCTION wimro_link_service_type(text, boolean);
