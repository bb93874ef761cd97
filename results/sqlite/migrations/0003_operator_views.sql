-- 0003: views that answer an operator's daily questions without joins, and
-- the indexes behind the drift listing and retention. Like 0001 and 0002,
-- this file never changes once shipped.

-- The latest run of every probe, with every column of results (SELECT r.*
-- is expanded each time the view is read, so a column added to results
-- later appears here too). "Latest" is the highest (started_at, id), the
-- order toolpulse lists history in.
--
-- A plain GROUP BY or window over results would read every row ever
-- recorded. Instead the recursive part walks the distinct probe names
-- through an index that starts with probe, one index search per probe,
-- and the latest row of each is one more search: the cost follows the
-- number of probes, not the length of the history.
CREATE VIEW latest_results AS
WITH RECURSIVE probes (probe) AS (
    SELECT min(probe) FROM results
    UNION ALL
    SELECT (SELECT min(probe) FROM results WHERE probe > probes.probe)
    FROM probes
    WHERE probes.probe IS NOT NULL
)
SELECT r.*
FROM probes
JOIN results r ON r.id = (
    SELECT id FROM results
    WHERE probe = probes.probe
    ORDER BY started_at DESC, id DESC
    LIMIT 1
)
ORDER BY r.probe;

-- Per probe over the last 24 hours of the clock of whoever reads it: how
-- many runs, how each ended, how many passed only after retries, and how
-- long they took. Rates are fractions of runs (0 to 1) rounded to four
-- places; avg_duration_ms is rounded to one. A probe with no run in the
-- last 24 hours has no row.
--
-- As in latest_results, the probes are walked through the index, and each
-- probe's last 24 hours are a range of results_probe_started_covering:
-- a plain "WHERE started_at >= ... GROUP BY probe" would have SQLite read
-- the whole index in probe order, a cost that grows with the history kept.
CREATE VIEW probe_summary_24h AS
WITH RECURSIVE probes (probe) AS (
    SELECT min(probe) FROM results
    UNION ALL
    SELECT (SELECT min(probe) FROM results WHERE probe > probes.probe)
    FROM probes
    WHERE probes.probe IS NOT NULL
)
SELECT
    r.probe                                                      AS probe,
    count(*)                                                     AS runs,
    sum(r.outcome = 'pass')                                      AS pass,
    sum(r.outcome = 'contract_error')                            AS contract_error,
    sum(r.outcome = 'unavailable')                               AS unavailable,
    round(1.0 * sum(r.outcome = 'pass') / count(*), 4)           AS pass_rate,
    round(1.0 * sum(r.outcome = 'contract_error') / count(*), 4) AS contract_error_rate,
    round(1.0 * sum(r.outcome = 'unavailable') / count(*), 4)    AS unavailable_rate,
    sum(r.outcome = 'pass' AND r.attempts > 1)                   AS passed_after_retries,
    round(avg(r.duration_ms), 1)                                 AS avg_duration_ms,
    max(r.duration_ms)                                           AS max_duration_ms,
    max(r.started_at)                                            AS last_started_at
FROM probes p
JOIN results r
  ON r.probe = p.probe
 AND r.started_at >= strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-24 hours')
GROUP BY r.probe
ORDER BY r.probe;

-- Replaces results_probe_started (probe, started_at) from 0001 with an
-- index that starts with the same columns, so it serves every query the
-- old one did, and also carries what per-probe statistics read: stats and
-- probe_summary_24h read a probe's runs in a window from this index alone,
-- without a table lookup per run. id (the rowid) is named third, where
-- the old index had it implicitly, so that "newest first" (started_at
-- DESC, id DESC) still comes out of the index without a sort.
DROP INDEX results_probe_started;
CREATE INDEX results_probe_started_covering
    ON results (probe, started_at, id, outcome, attempts, duration_ms);

-- "drifts of probe P, newest first" (API, status page).
CREATE INDEX drifts_probe_detected ON drifts (probe, detected_at);
-- "finished alerts older than T" (retention). Partial, so that it holds
-- no pending alert: the delivery loop's ORDER BY created_at must keep
-- reading alerts_pending rather than walk the whole outbox in this order.
CREATE INDEX alerts_done_created ON alerts (created_at) WHERE state <> 'pending';
