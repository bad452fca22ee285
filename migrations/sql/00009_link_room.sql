-- wimro schema, version 9: room on a WAN link's page for what its
-- controller answers (issue 16).
--
-- A link is inserted small (about 160 bytes: ids, status, QoS) and its
-- first outcome adds the service id and the controller's description of
-- the service (wim_info: the fake controller's, two connection points, is
-- about 450-550 bytes; the real controllers' are of the same order). With
-- fillfactor 70 a page held some forty new links and room for a handful of
-- grown versions, so most of those outcomes (70% on 100 accounts x 50
-- links) were not HOT: each wrote an entry in every index of the table
-- (four) and moved the row to another page, and later writes of the link
-- (refreshes, monitoring) did the same. At 15 a page holds about seven new
-- links and room for their grown versions, including the old versions a
-- batch of outcomes leaves until the page is pruned: every link update of
-- that run was HOT, and PostgreSQL's CPU per action fell by a fifth. The
-- table ends up about as large as before (the versions that left their
-- page filled new pages anyway). Existing pages keep their layout until
-- the table is rewritten.

-- +goose Up
ALTER TABLE instance_wim_nets SET (fillfactor = 15);

-- +goose Down
ALTER TABLE instance_wim_nets SET (fillfactor = 70);
