-- toolpulse's schema on Postgres: the meaning of the SQLite schema
-- (results/sqlite/migrations, documented in results/sqlite/SCHEMA.md) in
-- Postgres types, plus what a fleet of instances needs.
--
-- Names and ids (probe, operation_id, fingerprints) sort byte by byte
-- (COLLATE "C"), as in SQLite, whatever the database's locale.
--
-- Times are timestamptz holding whole milliseconds (the store truncates
-- every time it writes, as SQLite's text times do), durations bigint
-- milliseconds, flags boolean, JSON jsonb (json where the exact text must
-- come back: shape profiles, tool definitions, silence matchers). NULL
-- means "does not apply", as in SQLite.

CREATE TABLE shapes (
    fingerprint text COLLATE "C" PRIMARY KEY,
    canonical   text        NOT NULL,
    first_seen  timestamptz NOT NULL,
    last_seen   timestamptz NOT NULL,
    seen_count  bigint      NOT NULL DEFAULT 1 CHECK (seen_count >= 1),
    sample      text
);

CREATE TABLE results (
    id                bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    operation_id      text COLLATE "C" NOT NULL CONSTRAINT results_operation_id_key UNIQUE,
    probe             text COLLATE "C" NOT NULL,
    started_at        timestamptz NOT NULL,
    duration_ms       bigint      NOT NULL CHECK (duration_ms >= 0),
    outcome           text        NOT NULL CHECK (outcome IN ('pass', 'contract_error', 'unavailable')),
    code              text,
    message           text,
    retryable         boolean     NOT NULL DEFAULT false,
    attempts          integer     NOT NULL CHECK (attempts >= 0),
    http_status       integer,
    selected_count    integer     NOT NULL DEFAULT 0,
    validated_count   integer     NOT NULL DEFAULT 0,
    shape_fingerprint text COLLATE "C" REFERENCES shapes (fingerprint),
    consumer          text        NOT NULL,
    consumer_version  text        NOT NULL,
    rule_hash         text        NOT NULL,
    response_sample   text,
    shape_baseline    text,
    shape_drift       text,
    kind              text        NOT NULL DEFAULT 'http' CHECK (kind IN ('http', 'mcp', 'steps')),
    mcp_tool          text        CHECK ((kind = 'mcp') = (mcp_tool IS NOT NULL)),
    mcp_server        text        CHECK ((kind = 'mcp') = (mcp_server IS NOT NULL)),
    tool_fingerprint  text,
    step              text        CHECK (step IS NULL OR (kind = 'steps' AND outcome <> 'pass')),
    -- The fleet: the instance (fleet.node) that ran the operation, NULL
    -- when none was named, and the location it ran from.
    node              text,
    location          text        NOT NULL DEFAULT 'default',
    -- A failure always says why, and a pass never carries a failure
    -- (SPEC §1).
    CHECK ((outcome = 'pass') = (code IS NULL)),
    CHECK (outcome <> 'pass' OR (message IS NULL AND NOT retryable AND response_sample IS NULL))
);
-- History of all probes, newest first; prune's oldest first.
CREATE INDEX results_started ON results (started_at, id);
-- History, recent runs, stats' partial hours and last run of one probe:
-- a range read backwards, from the index alone.
CREATE INDEX results_probe_started_covering
    ON results (probe, started_at, id) INCLUDE (outcome, attempts, duration_ms);
-- Stats' streaks and the latest pass of a probe.
CREATE INDEX results_probe_outcome_started ON results (probe, outcome, started_at, id);
CREATE INDEX results_shape ON results (shape_fingerprint) WHERE shape_fingerprint IS NOT NULL;
CREATE INDEX results_tool ON results (probe, tool_fingerprint) WHERE tool_fingerprint IS NOT NULL;

CREATE TABLE attempts (
    operation_id text COLLATE "C" NOT NULL REFERENCES results (operation_id) ON DELETE CASCADE,
    number       integer     NOT NULL CHECK (number >= 1),
    started_at   timestamptz NOT NULL,
    duration_ms  bigint      NOT NULL CHECK (duration_ms >= 0),
    http_status  integer,
    code         text,
    message      text,
    wait_ms      bigint      NOT NULL DEFAULT 0 CHECK (wait_ms >= 0),
    method       text,
    try          integer     CHECK (try IS NULL OR try >= 1),
    step         text,
    poll         integer     CHECK (poll IS NULL OR poll >= 1),
    PRIMARY KEY (operation_id, number)
);

CREATE TABLE run_steps (
    operation_id      text COLLATE "C" NOT NULL REFERENCES results (operation_id) ON DELETE CASCADE,
    position          integer     NOT NULL CHECK (position >= 1),
    step              text        NOT NULL CHECK (step <> ''),
    outcome           text        NOT NULL CHECK (outcome IN ('pass', 'contract_error', 'unavailable')),
    code              text,
    message           text,
    started_at        timestamptz NOT NULL,
    duration_ms       bigint      NOT NULL CHECK (duration_ms >= 0),
    polls             integer     NOT NULL DEFAULT 0 CHECK (polls >= 0),
    always            boolean     NOT NULL DEFAULT false,
    skipped           boolean     NOT NULL DEFAULT false,
    shape_fingerprint text COLLATE "C" REFERENCES shapes (fingerprint),
    shape_baseline    text,
    shape_drift       text,
    CHECK ((outcome = 'pass') = (code IS NULL)),
    CHECK (outcome <> 'pass' OR message IS NULL),
    CHECK (NOT skipped OR outcome = 'pass'),
    CHECK (shape_drift IS NULL OR shape_fingerprint IS NOT NULL),
    PRIMARY KEY (operation_id, position)
);
CREATE INDEX run_steps_shape ON run_steps (shape_fingerprint) WHERE shape_fingerprint IS NOT NULL;

CREATE TABLE drifts (
    id                 bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    probe              text COLLATE "C" NOT NULL,
    operation_id       text COLLATE "C" NOT NULL,
    detected_at        timestamptz NOT NULL,
    baseline           text        NOT NULL,
    current            text        NOT NULL,
    diff               text        NOT NULL, -- SPEC §5 diff lines joined by "\n"
    kind               text        NOT NULL DEFAULT 'response' CHECK (kind IN ('response', 'definition')),
    description_before text,
    description_after  text,
    step               text        CHECK (step IS NULL OR kind = 'response'),
    CHECK (baseline <> current)
);
CREATE INDEX drifts_detected ON drifts (detected_at, id);
CREATE INDEX drifts_probe_detected ON drifts (probe, detected_at, id);
-- Prune keeps shapes a drift names.
CREATE INDEX drifts_baseline ON drifts (baseline);
CREATE INDEX drifts_current ON drifts (current);

CREATE TABLE alert_state (
    probe                text COLLATE "C" PRIMARY KEY,
    consecutive_failures integer     NOT NULL CHECK (consecutive_failures >= 0),
    failing_since        timestamptz,
    firing               boolean     NOT NULL DEFAULT false,
    last_notified_at     timestamptz,
    updated_at           timestamptz NOT NULL,
    notified             jsonb,
    modes                jsonb,
    announced            jsonb,
    receivers            jsonb,
    silenced_at          timestamptz
);

CREATE TABLE alerts (
    id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind             text        NOT NULL,
    probe            text COLLATE "C" NOT NULL,
    created_at       timestamptz NOT NULL,
    operation_id     text COLLATE "C" NOT NULL,
    outcome          text        NOT NULL CHECK (outcome IN ('pass', 'contract_error', 'unavailable')),
    code             text,
    message          text,
    attempts         integer     NOT NULL CHECK (attempts >= 0),
    duration_ms      bigint      NOT NULL CHECK (duration_ms >= 0),
    http_status      integer,
    consumer         text        NOT NULL,
    consumer_version text        NOT NULL,
    rule_hash        text        NOT NULL,
    failing_since    timestamptz,
    drift_id         bigint      REFERENCES drifts (id) ON DELETE SET NULL,
    state            text        NOT NULL DEFAULT 'pending'
                                 CHECK (state IN ('pending', 'delivered', 'failed', 'skipped')),
    delivery_tries   integer     NOT NULL DEFAULT 0 CHECK (delivery_tries >= 0),
    next_attempt_at  timestamptz,
    last_error       text,
    delivered_at     timestamptz,
    previous_mode    jsonb,
    modes            jsonb,
    receiver         text,
    labels           jsonb,
    target           text,
    response_excerpt text,
    resolving        boolean     NOT NULL DEFAULT false,
    CHECK ((outcome = 'pass') = (code IS NULL)),
    CHECK ((state = 'delivered') = (delivered_at IS NOT NULL))
);
-- The outbox's backlog: pending alerts only, in due order.
CREATE INDEX alerts_pending ON alerts (created_at, id) WHERE state = 'pending';
CREATE INDEX alerts_drift ON alerts (drift_id) WHERE drift_id IS NOT NULL;
CREATE INDEX alerts_done_created ON alerts (created_at) WHERE state <> 'pending';
CREATE INDEX alerts_by_probe ON alerts (probe, id);

CREATE TABLE shape_counts (
    probe       text COLLATE "C" NOT NULL,
    hour        timestamptz NOT NULL, -- the UTC hour the runs started in
    fingerprint text COLLATE "C" NOT NULL,
    runs        bigint      NOT NULL CHECK (runs >= 1),
    last_seen   timestamptz NOT NULL,
    PRIMARY KEY (probe, hour, fingerprint)
);
CREATE INDEX shape_counts_fingerprint ON shape_counts (fingerprint);

CREATE TABLE probe_hours (
    probe                text COLLATE "C" NOT NULL,
    hour                 timestamptz NOT NULL, -- the UTC hour the runs started in
    runs                 bigint      NOT NULL CHECK (runs >= 1),
    pass                 bigint      NOT NULL CHECK (pass >= 0),
    contract_error       bigint      NOT NULL CHECK (contract_error >= 0),
    unavailable          bigint      NOT NULL CHECK (unavailable >= 0),
    passed_after_retries bigint      NOT NULL CHECK (passed_after_retries >= 0),
    retries              bigint      NOT NULL CHECK (retries >= 0), -- attempts beyond the first
    duration_buckets     jsonb       NOT NULL, -- {"<bucket ms>": runs, ...}
    PRIMARY KEY (probe, hour)
);

CREATE TABLE silences (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    matchers   json        NOT NULL,
    starts_at  timestamptz NOT NULL,
    ends_at    timestamptz NOT NULL CHECK (ends_at > starts_at),
    reason     text        NOT NULL,
    created_at timestamptz NOT NULL,
    expired_at timestamptz
);

CREATE TABLE shape_profiles (
    probe      text COLLATE "C" PRIMARY KEY,
    profile    json,
    answers    bigint      NOT NULL DEFAULT 0 CHECK (answers >= 0),
    updated_at timestamptz NOT NULL,
    reset_at   timestamptz
);
CREATE INDEX shape_profiles_reset ON shape_profiles (reset_at) WHERE reset_at IS NOT NULL;

CREATE TABLE tool_definitions (
    probe         text COLLATE "C" NOT NULL,
    fingerprint   text COLLATE "C" NOT NULL,
    definition    json        NOT NULL,
    first_seen_at timestamptz NOT NULL,
    last_seen_at  timestamptz NOT NULL,
    PRIMARY KEY (probe, fingerprint)
);
CREATE INDEX tool_definitions_last ON tool_definitions (probe, last_seen_at);

-- The operator's views, as in SQLite: the latest result of every probe
-- (one index search per probe, walking the distinct names through the
-- index), and each probe's last 24 hours.
CREATE VIEW latest_results AS
WITH RECURSIVE probes (probe) AS (
    SELECT min(probe) FROM results
    UNION ALL
    SELECT (SELECT min(probe) FROM results WHERE probe > probes.probe)
    FROM probes
    WHERE probes.probe IS NOT NULL
)
SELECT r.*
FROM probes p
CROSS JOIN LATERAL (
    SELECT * FROM results
    WHERE probe = p.probe
    ORDER BY started_at DESC, id DESC
    LIMIT 1
) r
WHERE p.probe IS NOT NULL;

CREATE VIEW probe_summary_24h AS
SELECT
    probe,
    count(*)                                                              AS runs,
    count(*) FILTER (WHERE outcome = 'pass')                              AS pass,
    count(*) FILTER (WHERE outcome = 'contract_error')                    AS contract_error,
    count(*) FILTER (WHERE outcome = 'unavailable')                       AS unavailable,
    round(count(*) FILTER (WHERE outcome = 'pass')::numeric / count(*), 4)           AS pass_rate,
    round(count(*) FILTER (WHERE outcome = 'contract_error')::numeric / count(*), 4) AS contract_error_rate,
    round(count(*) FILTER (WHERE outcome = 'unavailable')::numeric / count(*), 4)    AS unavailable_rate,
    count(*) FILTER (WHERE outcome = 'pass' AND attempts > 1)             AS passed_after_retries,
    round(avg(duration_ms), 1)                                            AS avg_duration_ms,
    max(duration_ms)                                                      AS max_duration_ms,
    max(started_at)                                                       AS last_started_at
FROM results
WHERE started_at >= now() - interval '24 hours'
GROUP BY probe
ORDER BY probe;

-- The fleet (SPEC §12, §13). Created now so that leadership and
-- locations need no migration of their own; no code uses them yet.
--
-- fleet: one lease per location. The holder renews expires_at; a new
-- holder takes the lease with epoch + 1, and every write a leader makes
-- carries its epoch, refused once a newer one holds the lease.
CREATE TABLE fleet (
    location   text        PRIMARY KEY,
    holder     text,
    epoch      bigint      NOT NULL DEFAULT 0 CHECK (epoch >= 0),
    expires_at timestamptz,
    renewed_at timestamptz
);

-- fleet_nodes: every instance pointed at the database, with its heartbeat.
CREATE TABLE fleet_nodes (
    node         text        PRIMARY KEY,
    location     text        NOT NULL DEFAULT 'default',
    started_at   timestamptz NOT NULL,
    heartbeat_at timestamptz NOT NULL,
    version      text        NOT NULL DEFAULT ''
);
