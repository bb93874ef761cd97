-- 0014: multi-step probes (SPEC §11). A steps probe's run names the step
-- that decided it, each attempt names its step, and every step the run
-- reached has a run_steps row; a drift event of a step's answer names the
-- step. Like 0001 to 0013, this file never changes once shipped.

-- step: the step that decided the run, the first that failed; NULL when
-- every step passed, for a single probe, and on rows written before this
-- migration. A pass was decided by no step.
ALTER TABLE results ADD COLUMN step TEXT
    CHECK (step IS NULL OR (kind = 'steps' AND outcome <> 'pass'));

-- step: the step the attempt belongs to; NULL for a single probe.
ALTER TABLE attempts ADD COLUMN step TEXT;

-- step: the step whose answer drifted, for a response drift of a steps
-- probe (its baseline is the probe and step's); NULL for a single probe's.
ALTER TABLE drifts ADD COLUMN step TEXT
    CHECK (step IS NULL OR kind = 'response');

-- Every step a steps probe's run reached (Result.Steps), in the order
-- they ran, always steps last. Written with the result, deleted with it.
-- shape_fingerprint: the shape of the step's last answer when it was JSON
-- a rule read; its shapes row, and its shape_counts rows under the probe
-- key "PROBE/STEP", are written with the run. shape_baseline and
-- shape_drift: as in results, against the step's own profile.
CREATE TABLE run_steps (
    operation_id      TEXT    NOT NULL REFERENCES results (operation_id) ON DELETE CASCADE,
    position          INTEGER NOT NULL CHECK (position >= 1),
    step              TEXT    NOT NULL CHECK (step <> ''),
    outcome           TEXT    NOT NULL CHECK (outcome IN ('pass', 'contract_error', 'unavailable')),
    code              TEXT,
    message           TEXT,
    started_at        TEXT    NOT NULL,
    duration_ms       INTEGER NOT NULL CHECK (duration_ms >= 0),
    polls             INTEGER NOT NULL DEFAULT 0 CHECK (polls >= 0),
    always            INTEGER NOT NULL DEFAULT 0 CHECK (always IN (0, 1)),
    skipped           INTEGER NOT NULL DEFAULT 0 CHECK (skipped IN (0, 1)),
    shape_fingerprint TEXT    REFERENCES shapes (fingerprint),
    shape_baseline    TEXT,
    shape_drift       TEXT,
    -- As for results: a failure says why, a pass carries no failure. A
    -- skipped step did not run, so it cannot have failed.
    CHECK ((outcome = 'pass') = (code IS NULL)),
    CHECK (outcome <> 'pass' OR message IS NULL),
    CHECK (skipped = 0 OR outcome = 'pass'),
    CHECK (shape_drift IS NULL OR shape_fingerprint IS NOT NULL),
    PRIMARY KEY (operation_id, position)
) WITHOUT ROWID;

-- Keeps the shapes foreign key cheap when retention deletes shapes.
CREATE INDEX run_steps_shape ON run_steps (shape_fingerprint) WHERE shape_fingerprint IS NOT NULL;
