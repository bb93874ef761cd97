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

-- The statement of migration 0002, which counts the runs already recorded.
INSERT INTO shape_counts (probe, hour, fingerprint, runs, last_seen)
SELECT probe, substr(started_at, 1, 13), shape_fingerprint, count(*), max(started_at)
FROM results
WHERE shape_fingerprint IS NOT NULL
GROUP BY probe, substr(started_at, 1, 13), shape_fingerprint;
.print progress shape_counts

-- The statement of migration 0005, which sums up the runs already recorded
-- per probe and hour, as RecordRun keeps doing: probe_hours behind
-- toolpulse stats. (A copy: the migration is built into toolpulse.)
INSERT INTO probe_hours (probe, hour, runs, pass, contract_error, unavailable,
                         passed_after_retries, retries, duration_buckets)
WITH RECURSIVE
walk (probe, first_at) AS (
    VALUES ('', NULL)
    UNION ALL
    SELECT
        CASE WHEN first_at IS NULL
             THEN (SELECT min(probe) FROM results WHERE probe > walk.probe)
             ELSE probe END,
        CASE WHEN first_at IS NULL
             THEN (SELECT min(started_at) FROM results
                   WHERE probe = (SELECT min(probe) FROM results WHERE probe > walk.probe))
             ELSE (SELECT min(started_at) FROM results
                   WHERE probe = walk.probe AND started_at > substr(first_at, 1, 13) || '~') END
    FROM walk
    WHERE probe IS NOT NULL
),
-- Every started_at of hour H lies between H and H || '~': ':' and the
-- digits sort before '~'.
ranges (probe, hour) AS (
    SELECT probe, substr(first_at, 1, 13) FROM walk WHERE first_at IS NOT NULL
),
-- MATERIALIZED: the counters come out as one JSON array, read six times
-- below; without it SQLite would sum the range up six times.
sums AS MATERIALIZED (
    SELECT
        g.probe,
        g.hour,
        (SELECT json_array(count(*), sum(outcome = 'pass'), sum(outcome = 'contract_error'),
                           sum(outcome = 'unavailable'), sum(outcome = 'pass' AND attempts > 1),
                           sum(max(attempts - 1, 0)))
         FROM results
         WHERE probe = g.probe AND started_at > g.hour AND started_at < g.hour || '~') AS counters,
        (SELECT json_group_object(bucket, runs) FROM (
            SELECT
                -- The bucket of d: d itself below 128; below 2^(k+1),
                -- d with its k - 6 lowest bits cleared.
                CASE WHEN d < 128 THEN d
                     WHEN d < 256 THEN d >> 1 << 1
                     WHEN d < 512 THEN d >> 2 << 2
                     WHEN d < 1024 THEN d >> 3 << 3
                     WHEN d < 2048 THEN d >> 4 << 4
                     WHEN d < 4096 THEN d >> 5 << 5
                     WHEN d < 8192 THEN d >> 6 << 6
                     WHEN d < 16384 THEN d >> 7 << 7
                     WHEN d < 32768 THEN d >> 8 << 8
                     WHEN d < 65536 THEN d >> 9 << 9
                     WHEN d < 131072 THEN d >> 10 << 10
                     WHEN d < 262144 THEN d >> 11 << 11
                     WHEN d < 524288 THEN d >> 12 << 12
                     WHEN d < 1048576 THEN d >> 13 << 13
                     WHEN d < 2097152 THEN d >> 14 << 14
                     WHEN d < 4194304 THEN d >> 15 << 15
                     WHEN d < 8388608 THEN d >> 16 << 16
                     WHEN d < 16777216 THEN d >> 17 << 17
                     WHEN d < 33554432 THEN d >> 18 << 18
                     WHEN d < 67108864 THEN d >> 19 << 19
                     WHEN d < 134217728 THEN d >> 20 << 20
                     WHEN d < 268435456 THEN d >> 21 << 21
                     WHEN d < 536870912 THEN d >> 22 << 22
                     WHEN d < 1073741824 THEN d >> 23 << 23
                     WHEN d < 2147483648 THEN d >> 24 << 24
                     WHEN d < 4294967296 THEN d >> 25 << 25
                     WHEN d < 8589934592 THEN d >> 26 << 26
                     WHEN d < 17179869184 THEN d >> 27 << 27
                     WHEN d < 34359738368 THEN d >> 28 << 28
                     WHEN d < 68719476736 THEN d >> 29 << 29
                     WHEN d < 137438953472 THEN d >> 30 << 30
                     WHEN d < 274877906944 THEN d >> 31 << 31
                     WHEN d < 549755813888 THEN d >> 32 << 32
                     WHEN d < 1099511627776 THEN d >> 33 << 33
                     WHEN d < 2199023255552 THEN d >> 34 << 34
                     WHEN d < 4398046511104 THEN d >> 35 << 35
                     WHEN d < 8796093022208 THEN d >> 36 << 36
                     WHEN d < 17592186044416 THEN d >> 37 << 37
                     WHEN d < 35184372088832 THEN d >> 38 << 38
                     WHEN d < 70368744177664 THEN d >> 39 << 39
                     WHEN d < 140737488355328 THEN d >> 40 << 40
                     WHEN d < 281474976710656 THEN d >> 41 << 41
                     WHEN d < 562949953421312 THEN d >> 42 << 42
                     WHEN d < 1125899906842624 THEN d >> 43 << 43
                     WHEN d < 2251799813685248 THEN d >> 44 << 44
                     WHEN d < 4503599627370496 THEN d >> 45 << 45
                     WHEN d < 9007199254740992 THEN d >> 46 << 46
                     WHEN d < 18014398509481984 THEN d >> 47 << 47
                     WHEN d < 36028797018963968 THEN d >> 48 << 48
                     WHEN d < 72057594037927936 THEN d >> 49 << 49
                     WHEN d < 144115188075855872 THEN d >> 50 << 50
                     WHEN d < 288230376151711744 THEN d >> 51 << 51
                     WHEN d < 576460752303423488 THEN d >> 52 << 52
                     WHEN d < 1152921504606846976 THEN d >> 53 << 53
                     WHEN d < 2305843009213693952 THEN d >> 54 << 54
                     WHEN d < 4611686018427387904 THEN d >> 55 << 55
                     ELSE d >> 56 << 56 END AS bucket,
                count(*) AS runs
            FROM (SELECT duration_ms AS d FROM results
                  WHERE probe = g.probe AND started_at > g.hour AND started_at < g.hour || '~')
            GROUP BY bucket)) AS buckets
    FROM ranges g
)
SELECT probe, hour, counters ->> 0, counters ->> 1, counters ->> 2, counters ->> 3,
       counters ->> 4, counters ->> 5, buckets
FROM sums;
.print progress probe_hours

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
