-- 0006: the modes of a failure (SPEC §8). While an alert is firing, a run
-- that fails in another mode (outcome and code) than the last alert
-- announced sends an update, and the resolved message lists the modes the
-- failure went through. Like 0001 to 0005, this file never changes once
-- shipped.
--
-- A mode is stored as a JSON object {"outcome": ..., "code": ...} ("code"
-- left out when there is none), a list of modes as a JSON array of them,
-- in the order the modes first appeared. NULL is no mode, or no list.

-- notified: the mode the last firing, reminder or update alert announced.
-- modes: every mode of the current streak; announced: those an alert
-- announced. Rows written before this migration have NULL in all three;
-- toolpulse then takes the next run's mode for the one announced.
ALTER TABLE alert_state ADD COLUMN notified  TEXT;
ALTER TABLE alert_state ADD COLUMN modes     TEXT;
ALTER TABLE alert_state ADD COLUMN announced TEXT;

-- previous_mode: on an update alert, the mode it replaces.
-- modes: on a resolved alert, the modes the failure went through.
ALTER TABLE alerts ADD COLUMN previous_mode TEXT;
ALTER TABLE alerts ADD COLUMN modes         TEXT;
