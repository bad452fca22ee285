-- wimro schema, version 21: the WIM types of the IETF network-model
-- connectors.
--
-- - wims.type may be l2nm (RFC 9291, L2NM), l3nm (RFC 9182, L3NM) and
--   ietfl3vpn (RFC 8299, L3SM): the check of version 1 listed the types
--   of its time, so a WIM of a newer connector type was refused by the
--   database after wimd's registry had accepted it. The registry still
--   refuses a type this wimd has no connector for, before any write.
--
-- Down refuses while a WIM of one of these types exists (the check of
-- version 1 would not hold): delete or retype those WIMs first.

-- +goose Up
ALTER TABLE wims DROP CONSTRAINT wims_type_check;
ALTER TABLE wims ADD CONSTRAINT wims_type_check
    CHECK (type IN ('ietfl2vpn', 'l2nm', 'l3nm', 'ietfl3vpn', 'tapi', 'onos', 'onos_vpls', 'dynpac', 'odl', 'fake', 'failing'));

-- +goose Down
ALTER TABLE wims DROP CONSTRAINT wims_type_check;
ALTER TABLE wims ADD CONSTRAINT wims_type_check
    CHECK (type IN ('ietfl2vpn', 'tapi', 'onos', 'onos_vpls', 'dynpac', 'odl', 'fake', 'failing'));
