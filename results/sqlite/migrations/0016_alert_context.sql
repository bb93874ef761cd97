-- 0016: what an alert's reader needs next, kept with the alert so that the
-- outbox can deliver it whole, also after a restart. Like 0001 to 0015,
-- this file never changes once shipped.

-- target: what the run called, "POST https://host/path" or "tool NAME at
-- https://host/path" ("step NAME: " before it for a steps probe's step);
-- never a query, userinfo or header. NULL when unknown, and before this
-- migration.
ALTER TABLE alerts ADD COLUMN target TEXT;

-- response_excerpt: the start of the body a failed run received, at most
-- 500 characters of its response sample, secrets scrubbed. NULL when the
-- run passed or got no body, and before this migration.
ALTER TABLE alerts ADD COLUMN response_excerpt TEXT;

-- resolving: 1 on a shape_drift alert whose run also resolved the probe's
-- failure (its resolved alert was recorded just before it); 0 otherwise.
ALTER TABLE alerts ADD COLUMN resolving INTEGER NOT NULL DEFAULT 0 CHECK (resolving IN (0, 1));
