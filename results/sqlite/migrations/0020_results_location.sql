-- 0019: where each operation ran from (SPEC §13): a probe may run from
-- several named locations, each location's elected instance running it.
-- Like 0001 to 0018, this file never changes once shipped.

-- location: the fleet.location of the daemon that ran the operation;
-- 'default' for a single instance, for runs no daemon recorded
-- (toolpulse check) and for rows written before this migration.
ALTER TABLE results ADD COLUMN location TEXT NOT NULL DEFAULT 'default' CHECK (location <> '');

-- "the runs of probe P from location L, newest first": history and the
-- API filtered by location, and each location's latest run of a probe.
CREATE INDEX results_probe_location_started ON results (probe, location, started_at, id);
