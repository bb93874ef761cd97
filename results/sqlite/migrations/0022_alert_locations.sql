-- 0022: the fleet-wide decision (SPEC §13): an alert about a probe of
-- several locations shows each location's verdict, and names the decider
-- that made it. A single SQLite instance has one location and no decider,
-- so it leaves both NULL; they are here so that every store keeps the same
-- alerts. Like 0001 to 0021, this file never changes once shipped.

-- locations: a JSON array of each location's view (location, failing,
-- silent, outcome, code, last_run), in the probe's order.
ALTER TABLE alerts ADD COLUMN locations TEXT;

-- decider: the lease of the decider that made the alert ('_decider').
ALTER TABLE alerts ADD COLUMN decider TEXT;
