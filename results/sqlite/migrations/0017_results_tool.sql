-- 0017: retention prunes tool_definitions (SPEC §10) that no kept result
-- names, so that a server whose tool description changes with every
-- session does not grow the database for ever. Like 0001 to 0016, this
-- file never changes once shipped.

-- "Does a result of this probe name this definition?", asked by Prune for
-- each definition it may delete.
CREATE INDEX results_tool ON results (probe, tool_fingerprint) WHERE tool_fingerprint IS NOT NULL;
