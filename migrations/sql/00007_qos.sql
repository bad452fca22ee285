-- wimro schema, version 7: the QoS a VLD asks of its WAN link (issue 17).

-- +goose Up

-- NULL asks nothing (the controller's default). The bounds are the API's
-- (engine/qos.go): the database refuses what the API would.
ALTER TABLE instance_wim_nets
    ADD COLUMN bandwidth_mbps integer CHECK (bandwidth_mbps BETWEEN 1 AND 10000000),
    ADD COLUMN latency_ms     integer CHECK (latency_ms BETWEEN 1 AND 100000);

-- +goose Down
ALTER TABLE instance_wim_nets DROP COLUMN bandwidth_mbps, DROP COLUMN latency_ms;
