-- 0001: results, their attempts and the shapes they were seen with.
-- Every later change is a new file (0002_..., never an edit to this one):
-- databases in the field have already run it.

-- The canonical structural shape of each fingerprint ever seen.
CREATE TABLE shapes (
    fingerprint TEXT    PRIMARY KEY,
    canonical   TEXT    NOT NULL,
    first_seen  TEXT    NOT NULL,
    last_seen   TEXT    NOT NULL,
    seen_count  INTEGER NOT NULL DEFAULT 1 CHECK (seen_count >= 1)
);

-- One row per operation (one run of one probe). Rows are written once, in
-- one transaction with their attempts, and never updated.
CREATE TABLE results (
    id                INTEGER PRIMARY KEY,
    operation_id      TEXT    NOT NULL UNIQUE,
    probe             TEXT    NOT NULL,
    started_at        TEXT    NOT NULL,
    duration_ms       INTEGER NOT NULL CHECK (duration_ms >= 0),
    outcome           TEXT    NOT NULL CHECK (outcome IN ('pass', 'contract_error', 'unavailable')),
    code              TEXT,
    message           TEXT,
    retryable         INTEGER NOT NULL DEFAULT 0 CHECK (retryable IN (0, 1)),
    attempts          INTEGER NOT NULL CHECK (attempts >= 0),
    http_status       INTEGER,
    selected_count    INTEGER NOT NULL DEFAULT 0,
    validated_count   INTEGER NOT NULL DEFAULT 0,
    shape_fingerprint TEXT    REFERENCES shapes (fingerprint),
    consumer          TEXT    NOT NULL,
    consumer_version  TEXT    NOT NULL,
    rule_hash         TEXT    NOT NULL,
    response_sample   TEXT,
    -- A failure always says why, and a pass never carries a failure: the
    -- two states stay distinct in storage too (SPEC §1).
    CHECK ((outcome = 'pass') = (code IS NULL)),
    CHECK (outcome <> 'pass' OR (message IS NULL AND retryable = 0 AND response_sample IS NULL))
);

-- "latest results of probe X", "results of probe X since T".
CREATE INDEX results_probe_started ON results (probe, started_at);
-- "everything since T" (history, stats, retention).
CREATE INDEX results_started ON results (started_at);
-- "non-pass (or one outcome's) results of probe X since T".
CREATE INDEX results_probe_outcome_started ON results (probe, outcome, started_at);
-- "runs that returned shape F"; also keeps the shapes foreign key cheap.
CREATE INDEX results_shape ON results (shape_fingerprint) WHERE shape_fingerprint IS NOT NULL;

-- Every HTTP attempt of an operation, first included.
CREATE TABLE attempts (
    operation_id TEXT    NOT NULL REFERENCES results (operation_id) ON DELETE CASCADE,
    number       INTEGER NOT NULL CHECK (number >= 1),
    started_at   TEXT    NOT NULL,
    duration_ms  INTEGER NOT NULL CHECK (duration_ms >= 0),
    http_status  INTEGER,
    code         TEXT,
    message      TEXT,
    wait_ms      INTEGER NOT NULL DEFAULT 0 CHECK (wait_ms >= 0),
    PRIMARY KEY (operation_id, number)
);
