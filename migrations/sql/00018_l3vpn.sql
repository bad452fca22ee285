-- wimro schema, version 18: layer-3 VPNs and the service type of a link.
--
-- - instance_nets.l3: the site of an L3VPN a local network asks in its
--   datacenter (prefix, PE and CE addresses, static routes or BGP), as
--   the engine checked it (connectors.L3Site's JSON); NULL for layer 2.
-- - instance_wim_nets.service_type: what the engine chose the link to be
--   (ELINE, ELAN, L3VPN) and checked the WIM's connector declares. NULL
--   on links written before this version: the runner then derives the
--   type from the points as it did (ELAN when multipoint or over more
--   than two datacenters, else ELINE).

-- +goose Up
ALTER TABLE instance_nets ADD COLUMN l3 jsonb CHECK (l3 IS NULL OR jsonb_typeof(l3) = 'object');
ALTER TABLE instance_wim_nets ADD COLUMN service_type text CHECK (service_type IN ('ELINE', 'ELAN', 'L3VPN'));

-- +goose Down
ALTER TABLE instance_wim_nets DROP COLUMN service_type;
ALTER TABLE instance_nets DROP COLUMN l3;
