-- 0010: who was told of a failure (SPEC §8). A reload can move a firing
-- probe to another route; its resolved alert goes to the receivers that
-- were told it was failing, and the receivers of its new route are told it
-- is failing. A silenced probe records its skipped alert once per
-- repeat_interval, not on every run. Like 0001 to 0009, this file never
-- changes once shipped.

-- receivers: the keys of the receivers an alert of the firing streak went
-- to, as a JSON array of strings such as ["default/slack"]. NULL while not
-- firing, and in rows written before this migration: toolpulse then takes
-- the receivers of the probe's current route for them.
ALTER TABLE alert_state ADD COLUMN receivers TEXT;

-- silenced_at: when the streak's last alert was recorded skipped because
-- a silence covered the probe. NULL when none was since the last alert.
ALTER TABLE alert_state ADD COLUMN silenced_at TEXT;
