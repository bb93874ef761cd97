-- Locations (SPEC §13): results.location has been kept since 0001; a
-- probe now runs from several named locations, and readers ask for one
-- location's runs of a probe ("the runs of probe P from location L, newest
-- first": history and the API filtered by location, each location's
-- latest run of a probe), which this index answers without reading the
-- other locations' rows.
CREATE INDEX results_probe_location_started ON results (probe, location, started_at, id);
