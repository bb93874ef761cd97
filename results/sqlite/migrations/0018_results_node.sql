-- 0018: which instance ran each operation (SPEC §12): several toolpulse
-- instances may share one store, each named by its fleet.node. Like 0001
-- to 0017, this file never changes once shipped.

-- node: the fleet.node of the daemon that ran the operation; NULL for a
-- run no daemon recorded (toolpulse check) and on rows written before
-- this migration.
ALTER TABLE results ADD COLUMN node TEXT CHECK (node IS NULL OR node <> '');
