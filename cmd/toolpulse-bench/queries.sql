-- Copies of the SQL that `toolpulse stats --since 24h`, `toolpulse history
-- --probe P --limit 100` and GET /api/v1/probes run, for --explain. The
-- originals are unexported constants of results/sqlite, so they cannot be
-- read at run time: when one of them changes, change its copy here.
--
-- Each query starts with a "-- query:" line naming it and where it comes
-- from. Parameters stay unbound (NULL): without ANALYZE statistics, which
-- toolpulse never gathers, SQLite plans the same whatever their values.

-- query: stats: probe names (results/sqlite/stats.go, probeNames)
WITH RECURSIVE probes (probe) AS (
    SELECT min(probe) FROM results
    UNION ALL
    SELECT (SELECT min(probe) FROM results WHERE probe > probes.probe)
    FROM probes
    WHERE probes.probe IS NOT NULL
)
SELECT probe FROM probes WHERE probe IS NOT NULL;

-- query: stats: one probe's counters and durations, run per probe: the window's whole hours from probe_hours, its partial first and last hours from results (results/sqlite/stats.go, statsProbe)
SELECT sum(runs), sum(pass), sum(contract_error), sum(unavailable),
    sum(passed_after_retries), sum(retries), group_concat(buckets), group_concat(durations)
FROM (
    SELECT sum(runs) AS runs, sum(pass) AS pass, sum(contract_error) AS contract_error,
        sum(unavailable) AS unavailable, sum(passed_after_retries) AS passed_after_retries,
        sum(retries) AS retries, group_concat(duration_buckets) AS buckets, NULL AS durations
    FROM probe_hours
    WHERE probe = ?1 AND hour >= ?2 AND hour < ?3
    UNION ALL
    SELECT count(*), sum(outcome = 'pass'), sum(outcome = 'contract_error'),
        sum(outcome = 'unavailable'), sum(outcome = 'pass' AND attempts > 1),
        sum(max(attempts - 1, 0)), NULL, group_concat(duration_ms)
    FROM results
    WHERE probe = ?1 AND started_at >= ?4 AND started_at < ?5
    UNION ALL
    SELECT count(*), sum(outcome = 'pass'), sum(outcome = 'contract_error'),
        sum(outcome = 'unavailable'), sum(outcome = 'pass' AND attempts > 1),
        sum(max(attempts - 1, 0)), NULL, group_concat(duration_ms)
    FROM results
    WHERE probe = ?1 AND started_at >= ?6 AND started_at < ?7
);

-- query: stats: a probe's last run in the window, run per probe (results/sqlite/stats.go, statsLast)
SELECT started_at, outcome, code FROM results
WHERE probe = ? AND started_at >= ? AND started_at < ?
ORDER BY started_at DESC, id DESC
LIMIT 1;

-- query: stats: latest run with another outcome, run twice per probe (results/sqlite/stats.go, streakBreak)
SELECT started_at, id FROM results
WHERE probe = ?1 AND outcome = ?2 AND started_at <= ?3
ORDER BY started_at DESC, id DESC
LIMIT 1;

-- query: stats: first run of the current streak, run per probe (results/sqlite/stats.go, streakStart)
SELECT started_at FROM results
WHERE probe = ?1 AND started_at >= ?2 AND (started_at > ?2 OR id > ?3)
ORDER BY started_at, id
LIMIT 1;

-- query: stats: drift events per probe in the window (results/sqlite/stats.go, statsDrifts with its window)
SELECT probe, count(*) FROM drifts
WHERE detected_at >= ? AND detected_at < ? GROUP BY probe;

-- query: history: the page, one probe, limit 100 (results/sqlite/history.go, historyQuery; read.go, resultColumns and resultFrom)
SELECT r.operation_id, r.probe, r.started_at, r.duration_ms, r.outcome, r.code,
    r.message, r.retryable, r.http_status, r.selected_count, r.validated_count,
    r.shape_fingerprint, s.canonical, r.consumer, r.consumer_version, r.rule_hash,
    r.response_sample
FROM results r LEFT JOIN shapes s ON s.fingerprint = r.shape_fingerprint
WHERE r.probe IN (?)
ORDER BY r.started_at DESC, r.id DESC
LIMIT ?;

-- query: history: the attempts of the page, one placeholder per result (results/sqlite/history.go, loadAttempts)
SELECT operation_id, number, started_at, duration_ms, http_status, code, message, wait_ms
FROM attempts WHERE operation_id IN (?, ?, ?)
ORDER BY operation_id, number;

-- query: GET /api/v1/probes: the latest run of every probe (results/sqlite/history.go, latestResults)
SELECT r.operation_id, r.probe, r.started_at, r.duration_ms, r.outcome, r.code,
    r.message, r.retryable, r.http_status, r.selected_count, r.validated_count,
    r.shape_fingerprint, s.canonical, r.consumer, r.consumer_version, r.rule_hash,
    r.response_sample
FROM latest_results r LEFT JOIN shapes s ON s.fingerprint = r.shape_fingerprint
ORDER BY r.probe;
