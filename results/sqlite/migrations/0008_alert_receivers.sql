-- 0008: routing and receivers (SPEC §8). A probe's alerts go to the
-- receivers of the first route its labels match; a route may name several
-- receivers, and each gets its own row in the outbox, delivered, retried
-- and failed on its own. Like 0001 to 0007, this file never changes once
-- shipped.

-- receiver: the key of the receiver the alert is for, the route and the
-- kind: "default/slack", "routes[0]/alertmanager", "routes[2]/webhook".
-- NULL for an alert recorded without a receiver (skipped).
ALTER TABLE alerts ADD COLUMN receiver TEXT;

-- labels: the probe's labels when the alert was made, as a JSON object of
-- strings. NULL when the probe had none.
ALTER TABLE alerts ADD COLUMN labels TEXT;

-- Before routes there was one receiver, notify.slack: every alert that was
-- not skipped was for it.
UPDATE alerts SET receiver = 'default/slack' WHERE state <> 'skipped';
