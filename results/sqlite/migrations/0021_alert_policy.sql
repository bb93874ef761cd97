-- 0019: the alert policy's verdict (SPEC §13): success_threshold,
-- failure_window and flap detection keep what they count in the probe's
-- alert state, so a restart goes on counting where it was. Like 0001 to
-- 0018, this file never changes once shipped.

-- failing: the verdict of the probe's thresholds. A probe that fired was
-- failing; one that had not fired yet is judged again by its next run.
ALTER TABLE alert_state ADD COLUMN failing INTEGER NOT NULL DEFAULT 0 CHECK (failing IN (0, 1));
UPDATE alert_state SET failing = firing;

-- consecutive_passes: passes since the last failure while failing.
ALTER TABLE alert_state ADD COLUMN consecutive_passes INTEGER NOT NULL DEFAULT 0 CHECK (consecutive_passes >= 0);

-- window_bits, window_runs: the outcomes of the last window_runs runs,
-- newest in the lowest bit, 1 for a run that did not pass (the 64 bits of
-- an unsigned mask, stored as a signed integer).
ALTER TABLE alert_state ADD COLUMN window_bits INTEGER NOT NULL DEFAULT 0;
ALTER TABLE alert_state ADD COLUMN window_runs INTEGER NOT NULL DEFAULT 0 CHECK (window_runs BETWEEN 0 AND 64);

-- flapping, flapping_since, verdict_changes: flap detection.
ALTER TABLE alert_state ADD COLUMN flapping INTEGER NOT NULL DEFAULT 0 CHECK (flapping IN (0, 1));
ALTER TABLE alert_state ADD COLUMN flapping_since TEXT;
ALTER TABLE alert_state ADD COLUMN verdict_changes TEXT;
