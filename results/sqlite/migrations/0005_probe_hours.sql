-- 0005: each probe's runs summed up per UTC hour, so that statistics over
-- a day read some 25 rows per probe instead of every run, and latency
-- percentiles come from counts kept as runs are recorded. Like 0001 to
-- 0004, this file never changes once shipped.

-- One row per probe and UTC hour that has runs: how many, how they
-- ended, and their durations counted in buckets. RecordRun adds each run
-- in the transaction that stores it, and Prune takes each result it
-- deletes away in the transaction that deletes it, so that a row always
-- sums up exactly the results stored for its probe and hour.
--
-- duration_buckets is a JSON object: each key names a bucket of
-- durations by the shortest duration in milliseconds it holds, and its
-- value counts the runs whose duration_ms falls in it. Below 128 ms a
-- bucket is one millisecond wide; from 128 ms on, each power of two is
-- split into 64 buckets: [128, 256) into buckets 2 ms wide, [256, 512)
-- 4 ms wide, and so on, so that a bucket is never wider than 1/64 of the
-- durations it holds.
CREATE TABLE probe_hours (
    probe                TEXT    NOT NULL,
    hour                 TEXT    NOT NULL, -- first 13 characters of started_at: '2026-10-26T13'
    runs                 INTEGER NOT NULL CHECK (runs >= 1),
    pass                 INTEGER NOT NULL CHECK (pass >= 0),
    contract_error       INTEGER NOT NULL CHECK (contract_error >= 0),
    unavailable          INTEGER NOT NULL CHECK (unavailable >= 0),
    passed_after_retries INTEGER NOT NULL CHECK (passed_after_retries >= 0),
    retries              INTEGER NOT NULL CHECK (retries >= 0), -- attempts beyond the first
    duration_buckets     TEXT    NOT NULL,
    PRIMARY KEY (probe, hour)
) WITHOUT ROWID;

-- Sum up the runs already recorded. A GROUP BY over results would sort
-- every run; instead the walk visits each probe and hour that has runs,
-- in order, with one index search each (the first run of the probe after
-- the hour, or of the next probe after its last run), and each is summed
-- up from its range of results_probe_started_covering. A walk row with a
-- NULL first_at stands for "after the last run of probe"; the walk
-- starts after a probe named '', which sorts before every name.
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
