-- probe_hours per location (SPEC §13), so that stats answers for one
-- location as history does. Every row becomes 'default', which is what
-- its runs recorded: no daemon wrote another location before this
-- release. The column's default serves this migration alone: every
-- writer (RecordRun, RollupStatements) names the location.
--
-- location comes after hour in the key, so that a probe's hours over
-- every location are still one range of it, read as before when stats
-- names no location.
ALTER TABLE probe_hours ADD COLUMN location text NOT NULL DEFAULT 'default' CHECK (location <> '');
ALTER TABLE probe_hours ALTER COLUMN location DROP DEFAULT;
ALTER TABLE probe_hours DROP CONSTRAINT probe_hours_pkey, ADD PRIMARY KEY (probe, hour, location);
