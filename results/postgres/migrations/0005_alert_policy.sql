-- The alert policy's verdict (SPEC §13): success_threshold, failure_window
-- and flap detection keep what they count in the probe's alert state, so
-- a new leader goes on counting where the last one was.

-- failing: the verdict of the probe's thresholds. A probe that fired was
-- failing; one that had not fired yet is judged again by its next run.
-- consecutive_passes: passes since the last failure while failing.
-- window_bits, window_runs: the outcomes of the last window_runs runs,
-- newest in the lowest bit, 1 for a run that did not pass (the 64 bits of
-- an unsigned mask, stored as a signed bigint).
-- flapping, flapping_since, verdict_changes: flap detection.
ALTER TABLE alert_state
    ADD COLUMN failing            boolean     NOT NULL DEFAULT false,
    ADD COLUMN consecutive_passes integer     NOT NULL DEFAULT 0 CHECK (consecutive_passes >= 0),
    ADD COLUMN window_bits        bigint      NOT NULL DEFAULT 0,
    ADD COLUMN window_runs        integer     NOT NULL DEFAULT 0 CHECK (window_runs BETWEEN 0 AND 64),
    ADD COLUMN flapping           boolean     NOT NULL DEFAULT false,
    ADD COLUMN flapping_since     timestamptz,
    ADD COLUMN verdict_changes    timestamptz[];
UPDATE alert_state SET failing = firing;
