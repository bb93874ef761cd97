-- 0002: what the daemon keeps besides results: drift events, each probe's
-- alerting memory, the alert outbox, and hourly shape counts for drift
-- detection. Like 0001, this file never changes once shipped.

-- One row per drift event: a run whose fingerprint differed from its
-- probe's dominant one (SPEC §5). Written once, with the run's result.
-- operation_id has no foreign key: retention may prune the result first.
CREATE TABLE drifts (
    id           INTEGER PRIMARY KEY,
    probe        TEXT    NOT NULL,
    operation_id TEXT    NOT NULL,
    detected_at  TEXT    NOT NULL,
    baseline     TEXT    NOT NULL,
    current      TEXT    NOT NULL,
    diff         TEXT    NOT NULL, -- SPEC §5 diff lines joined by "\n"
    CHECK (baseline <> current)
);

-- "when did probe P last drift to F" (one drift alert per hour) and
-- "drifts of probe P".
CREATE INDEX drifts_probe_current_detected ON drifts (probe, current, detected_at);
-- "drifts since T" (API, stats, retention).
CREATE INDEX drifts_detected ON drifts (detected_at);

-- Each probe's alerting memory, rewritten with every run that changes it,
-- so that a restart neither re-alerts a known failure nor forgets to
-- resolve it.
CREATE TABLE alert_state (
    probe                TEXT    PRIMARY KEY,
    consecutive_failures INTEGER NOT NULL CHECK (consecutive_failures >= 0),
    failing_since        TEXT,
    firing               INTEGER NOT NULL DEFAULT 0 CHECK (firing IN (0, 1)),
    last_notified_at     TEXT,
    updated_at           TEXT    NOT NULL
);

-- The outbox: every alert toolpulse decided to send, with its delivery
-- state. An alert that the receiver could not take stays pending and is
-- retried, across restarts. kind has no CHECK so that a later release can
-- add kinds without rebuilding the table; the store validates it.
CREATE TABLE alerts (
    id               INTEGER PRIMARY KEY,
    kind             TEXT    NOT NULL,
    probe            TEXT    NOT NULL,
    created_at       TEXT    NOT NULL,
    operation_id     TEXT    NOT NULL,
    outcome          TEXT    NOT NULL CHECK (outcome IN ('pass', 'contract_error', 'unavailable')),
    code             TEXT,
    message          TEXT,
    attempts         INTEGER NOT NULL CHECK (attempts >= 0),
    duration_ms      INTEGER NOT NULL CHECK (duration_ms >= 0),
    http_status      INTEGER,
    consumer         TEXT    NOT NULL,
    consumer_version TEXT    NOT NULL,
    rule_hash        TEXT    NOT NULL,
    failing_since    TEXT,
    drift_id         INTEGER REFERENCES drifts (id) ON DELETE SET NULL,
    state            TEXT    NOT NULL DEFAULT 'pending'
                             CHECK (state IN ('pending', 'delivered', 'failed', 'skipped')),
    delivery_tries   INTEGER NOT NULL DEFAULT 0 CHECK (delivery_tries >= 0),
    next_attempt_at  TEXT,
    last_error       TEXT,
    delivered_at     TEXT,
    -- As in results: a pass carries no code, a failure always has one.
    CHECK ((outcome = 'pass') = (code IS NULL)),
    CHECK ((state = 'delivered') = (delivered_at IS NOT NULL))
);

-- The delivery loop's "what is due": only pending alerts are indexed, so
-- the index stays small however long the delivered history grows.
CREATE INDEX alerts_pending ON alerts (next_attempt_at) WHERE state = 'pending';
-- Keeps the drifts foreign key cheap when retention deletes drifts.
CREATE INDEX alerts_drift ON alerts (drift_id) WHERE drift_id IS NOT NULL;

-- Runs per probe, UTC hour and fingerprint: the dominant shape of the last
-- 24 hours is a sum over at most 25 rows per fingerprint instead of a scan
-- of a day of results. hour is the first 13 characters of started_at
-- ('2026-10-26T13'); last_seen is the latest started_at counted, to break
-- ties.
CREATE TABLE shape_counts (
    probe       TEXT    NOT NULL,
    hour        TEXT    NOT NULL,
    fingerprint TEXT    NOT NULL,
    runs        INTEGER NOT NULL CHECK (runs >= 1),
    last_seen   TEXT    NOT NULL,
    PRIMARY KEY (probe, hour, fingerprint)
) WITHOUT ROWID;

-- A database upgraded from 0001 keeps its drift baseline: count the runs
-- already recorded.
INSERT INTO shape_counts (probe, hour, fingerprint, runs, last_seen)
SELECT probe, substr(started_at, 1, 13), shape_fingerprint, count(*), max(started_at)
FROM results
WHERE shape_fingerprint IS NOT NULL
GROUP BY probe, substr(started_at, 1, 13), shape_fingerprint;
