-- 0011: learned shape profiles (SPEC §5). Drift is judged against what a
-- probe's answers have shown path by path, kept as one row per probe and
-- rewritten in the transaction of a run that changes it, instead of
-- against the dominant fingerprint of shape_counts. Like 0001 to 0010,
-- this file never changes once shipped.
--
-- Existing fingerprints are carried over as they are: results, shapes and
-- drifts keep theirs. A probe without a profile row builds its first
-- profile from the shapes its runs showed in the last 24 hours
-- (shape_counts), so an upgrade neither starts the warm-up again nor
-- alerts on the answers it already knew. Answers holding an object whose
-- keys are data (a map) get a new fingerprint once, from this version on.

-- profile: the JSON stored form of results/shape.Profile; NULL after a
-- reset, until the daemon has learned a new one. reset_at: when `toolpulse
-- baseline reset` last reset it; the daemon writes a profile only over
-- the reset it learned from, so a reset is never overwritten by a profile
-- learned before it.
CREATE TABLE shape_profiles (
    probe      TEXT PRIMARY KEY,
    profile    TEXT CHECK (profile IS NULL OR json_valid(profile)),
    answers    INTEGER NOT NULL DEFAULT 0 CHECK (answers >= 0),
    updated_at TEXT    NOT NULL,
    reset_at   TEXT
);

-- "probes reset since T", read by the daemon every few seconds.
CREATE INDEX shape_profiles_reset ON shape_profiles (reset_at) WHERE reset_at IS NOT NULL;

-- Whether each run's answer drifted from its probe's profile, so that the
-- status page and the API tell whether the latest answer is drifted and
-- not only when the last drift event was. NULL: it did not drift (or was
-- recorded before this migration, or without drift detection).
-- shape_baseline: the fingerprint of the probe's latest answer that fitted
-- its profile; shape_drift: the diff lines, joined by "\n".
ALTER TABLE results ADD COLUMN shape_baseline TEXT;
ALTER TABLE results ADD COLUMN shape_drift    TEXT;
