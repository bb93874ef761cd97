-- 0019: grouped messages (notify.group_by). An alert that joins a group
-- names it, so that the deliverer sends a group's pending alerts as one
-- message and knows, also after a restart, when the group last had one.
-- Like 0001 to 0018, this file never changes once shipped.

-- group_key: the receiver and the values of its route's group_by labels,
-- such as default/slack{provider="search"}; NULL for an alert delivered
-- alone (no group_by, a shape_drift, a skipped alert), and before this
-- migration.
ALTER TABLE alerts ADD COLUMN group_key TEXT;

-- A group's pending alerts and its newest delivered one, without a scan
-- of the outbox's history.
CREATE INDEX alerts_by_group ON alerts (group_key, state, id) WHERE group_key IS NOT NULL;
