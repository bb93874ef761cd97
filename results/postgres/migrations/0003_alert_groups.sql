-- Grouped messages (notify.group_by): an alert that joins a group names
-- it, so that the deliverer sends a group's pending alerts as one message
-- and knows, also after a restart or a failover, when the group last had
-- one. As results/sqlite's migration 0019.

-- group_key: the receiver and the values of its route's group_by labels,
-- such as default/slack{provider="search"}; NULL for an alert delivered
-- alone.
ALTER TABLE alerts ADD COLUMN group_key text COLLATE "C";

-- A group's pending alerts and its newest delivered one, without a scan
-- of the outbox's history.
CREATE INDEX alerts_by_group ON alerts (group_key, state, id) WHERE group_key IS NOT NULL;
