-- 0004: a sample body for each shape, so that a probe's real answer of its
-- current shape can be replayed (mutation tests) without keeping a body
-- per run. Like 0001 to 0003, this file never changes once shipped.

-- The whole response body, secrets scrubbed, of a run that showed this
-- shape: the first one recorded that carried a sample. NULL when none
-- did (shapes seen before this migration, and bodies over the cap, which
-- are not kept cut because a cut body is not JSON). Written with the
-- shape's row, or later by a run with the same shape while still NULL;
-- never replaced.
ALTER TABLE shapes ADD COLUMN sample TEXT;
