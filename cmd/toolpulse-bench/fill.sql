{{/*
fill.sql fills a database that toolpulse's own migrations created
(sqlite.Open) with synthetic results; generate.go executes this template
and pipes the script into the sqlite3 shell, run with -bail.

Result i (0-based) is slot i / probes of probe i % probes, so rows are
written in the order the daemon would record them: by time, and with ids,
operation ids and started_at all increasing together. Every value of a
result and of its attempts is a function of i alone (its time, and a hash
of i that picks the kind of run and the durations), so the attempts are
generated from the same sequence instead of being read back.

Lines starting with "progress " are shown as the fill goes.
*/ -}}
.print progress setup
-- No rollback journal while filling: a failed fill is deleted, never
-- repaired, and in WAL mode every page would be written twice. toolpulse's
-- WAL mode is restored at the end.
PRAGMA journal_mode = OFF;
PRAGMA synchronous = OFF;
-- Every parent row is written before its children; checking some 20
-- million references would only cost time.
PRAGMA foreign_keys = OFF;
PRAGMA cache_size = -{{.CacheKiB}};
-- Helper threads for the sorts of CREATE INDEX and GROUP BY.
PRAGMA threads = 4;

CREATE TEMP TABLE bench_kinds (
    id            INTEGER PRIMARY KEY,
    outcome       TEXT,
    code          TEXT,
    message       TEXT,
    retryable     INTEGER,
    attempts      INTEGER,
    http_status   INTEGER,
    selected      INTEGER,
    fingerprint   TEXT,
    sample        TEXT,
    timeout_ms    INTEGER, -- every attempt took this long; NULL: the durations are drawn
    failed_status INTEGER, -- the attempts before the last one
    failed_code   TEXT,
    failed_message TEXT,
    last_code     TEXT,    -- the last attempt
    last_message  TEXT
);
INSERT INTO bench_kinds VALUES
{{- range $i, $k := .Kinds}}{{if $i}},{{end}}
    ({{$k.ID}}, {{$k.Outcome}}, {{$k.Code}}, {{$k.Message}}, {{$k.Retryable}}, {{$k.Attempts}}, {{$k.HTTPStatus}}, {{$k.Selected}}, {{$k.Fingerprint}}, {{$k.Sample}}, {{$k.TimeoutMS}}, {{$k.FailedStatus}}, {{$k.FailedCode}}, {{$k.FailedMessage}}, {{$k.LastCode}}, {{$k.LastMessage}})
{{- end}};

CREATE TEMP TABLE bench_shapes (fingerprint TEXT PRIMARY KEY, canonical TEXT NOT NULL, diff TEXT); -- diff: NULL for the baseline
INSERT INTO bench_shapes VALUES
{{- range $i, $s := .Shapes}}{{if $i}},{{end}}
    ({{sql $s.Fingerprint}}, {{sql $s.Canonical}}, {{sql $s.Diff}})
{{- end}};

CREATE TEMP TABLE bench_attempt_numbers (n INTEGER PRIMARY KEY);
INSERT INTO bench_attempt_numbers VALUES (1), (2);

BEGIN;

-- Shapes first, for the foreign key from results; their dates and counts
-- are set from shape_counts at the end.
INSERT INTO shapes (fingerprint, canonical, first_seen, last_seen, seen_count)
SELECT fingerprint, canonical, {{sql .Now}}, {{sql .Now}}, 1 FROM bench_shapes;

-- Building an index once, from sorted keys, is much faster than growing it
-- row by row. Each is created again below from the text SQLite stored for
-- it, so it is exactly the index the migrations made.
{{range .Indexes}}DROP INDEX {{.Name}};
{{end}}
{{- range .Chunks}}
{{template "seq" .}}
INSERT INTO results (id, operation_id, probe, started_at, duration_ms, outcome, code, message,
    retryable, attempts, http_status, selected_count, validated_count, shape_fingerprint,
    consumer, consumer_version, rule_hash, response_sample)
SELECT
    s.i + 1,
    {{template "operation_id" .}},
    printf('probe-%0{{.Plan.NameWidth}}d', s.i % {{.Plan.Probes}} + 1),
    {{.Plan.Time "s.ms"}},
    (k.attempts - 1) * (coalesce(k.timeout_ms, {{.Plan.FailedMS "s.h"}}) + {{.Plan.WaitMS "s.h"}})
        + coalesce(k.timeout_ms, {{.Plan.DrawnMS "s.h"}}),
    k.outcome, k.code, k.message, k.retryable, k.attempts, k.http_status, k.selected, k.selected,
    k.fingerprint, {{sql .Plan.Consumer.Name}}, {{sql .Plan.Consumer.Version}}, {{sql .Plan.Consumer.RuleHash}}, k.sample
FROM seq AS s CROSS JOIN bench_kinds AS k
WHERE k.id = {{.Plan.KindOf "s.i" "s.h"}};

{{template "seq" .}}
INSERT INTO attempts (operation_id, number, started_at, duration_ms, http_status, code, message, wait_ms)
SELECT
    {{template "operation_id" .}},
    a.n,
    {{.Plan.Time (printf "s.ms + (a.n - 1) * (coalesce(k.timeout_ms, %s) + %s)" (.Plan.FailedMS "s.h") (.Plan.WaitMS "s.h"))}},
    CASE WHEN a.n < k.attempts THEN coalesce(k.timeout_ms, {{.Plan.FailedMS "s.h"}})
         ELSE coalesce(k.timeout_ms, {{.Plan.DrawnMS "s.h"}}) END,
    CASE WHEN a.n < k.attempts THEN k.failed_status ELSE k.http_status END,
    CASE WHEN a.n < k.attempts THEN k.failed_code ELSE k.last_code END,
    CASE WHEN a.n < k.attempts THEN k.failed_message ELSE k.last_message END,
    CASE WHEN a.n < k.attempts THEN {{.Plan.WaitMS "s.h"}} ELSE 0 END
FROM seq AS s CROSS JOIN bench_kinds AS k CROSS JOIN bench_attempt_numbers AS a
WHERE k.id = {{.Plan.KindOf "s.i" "s.h"}} AND a.n <= k.attempts;
.print progress results and their attempts: {{commas .Hi}} of {{commas .Plan.Results}}
{{end}}
{{- range .Indexes}}
{{.SQL}};
.print progress index {{.Name}}
{{- end}}

-- A few drifts per probe: the runs at its drift slots, which KindOf gave a
-- shape other than the baseline. (The daemon would also record drifts for
-- the other contract errors with a new shape, at most one per probe, shape
-- and hour; "a few per probe" keeps the table small, as the reads measured
-- only count it.)
WITH RECURSIVE probe (p) AS (
    SELECT 0 UNION ALL SELECT p + 1 FROM probe WHERE p + 1 < {{.Probes}}
),
slot (q) AS (VALUES {{range $i, $d := .DriftSlots}}{{if $i}}, {{end}}({{$d.Slot}}){{end}})
INSERT INTO drifts (probe, operation_id, detected_at, baseline, current, diff)
SELECT r.probe, r.operation_id, r.started_at, {{sql .Baseline}}, r.shape_fingerprint, b.diff
FROM probe CROSS JOIN slot
JOIN results AS r ON r.id = (slot.q + probe.p % {{.DriftSpread}}) * {{.Probes}} + probe.p + 1
JOIN bench_shapes AS b ON b.fingerprint = r.shape_fingerprint
WHERE r.shape_fingerprint <> {{sql .Baseline}}
ORDER BY r.started_at, r.id;
.print progress drifts

-- The rollups RecordRun keeps as it goes (shape_counts behind drift
-- detection, probe_hours behind toolpulse stats), filled from the results
-- by the statements of the migrations that created them, as toolpulse
-- exports them (sqlite.RollupStatements).
{{range .Rollups}}{{.}};
{{end -}}
.print progress rollups

-- The first run with a shape has the lowest id, since ids follow time.
UPDATE shapes SET
    seen_count = c.runs,
    last_seen = c.last_seen,
    first_seen = (SELECT started_at FROM results WHERE id =
        (SELECT min(id) FROM results WHERE shape_fingerprint = shapes.fingerprint))
FROM (SELECT fingerprint, sum(runs) AS runs, max(last_seen) AS last_seen
      FROM shape_counts GROUP BY fingerprint) AS c
WHERE c.fingerprint = shapes.fingerprint;
DELETE FROM shapes WHERE fingerprint NOT IN (SELECT fingerprint FROM shape_counts);
.print progress shapes

COMMIT;
PRAGMA journal_mode = WAL;
.print progress done

{{- define "seq"}}
WITH RECURSIVE seq (i, ms, h) AS (
    SELECT {{.Lo}}, {{.Plan.MS .Lo}}, {{.Plan.Hash .Lo}}
    UNION ALL
    SELECT i + 1, {{.Plan.MS "i + 1"}}, {{.Plan.Hash "i + 1"}} FROM seq WHERE i + 1 < {{.Hi}}
)
{{- end}}

{{- define "operation_id" -}}
{{/* Shaped like a UUIDv7: the millisecond first and i last, so ids grow
with every row and the unique index on them is only ever appended to.
toolpulse writes random (v4) ids, which scatter that index's pages; the
measured reads only look ids up by equality. */ -}}
printf('%08x-%04x-7000-%04x-%012x', s.ms >> 16, s.ms & 65535, 32768 | ((s.i >> 48) & 16383), s.i & 281474976710655)
{{- end}}
