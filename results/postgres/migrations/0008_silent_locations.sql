-- The locations of a probe of several locations announced silent (a
-- location_silent alert), so that a new decider neither announces one
-- again nor misses its end.

-- silent_locations: a JSON object of location to the time it was
-- announced silent; NULL when none is.
ALTER TABLE alert_state ADD COLUMN silent_locations text;
