-- 0024: the locations of a probe of several locations announced silent
-- (a location_silent alert), so that a new decider neither announces one
-- again nor misses its end. A single SQLite instance has one location and
-- leaves it NULL; it is here so that every store keeps the same alert
-- state. Like 0001 to 0023, this file never changes once shipped.

-- silent_locations: a JSON object of location to the time it was
-- announced silent; NULL when none is.
ALTER TABLE alert_state ADD COLUMN silent_locations TEXT;
