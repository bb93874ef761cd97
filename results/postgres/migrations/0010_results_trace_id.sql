-- The W3C trace each operation's requests carried (SPEC §10.1), so that a
-- run can be found in the provider's own traces.

-- trace_id: the run's trace id, 32 lower-case hex digits; NULL for a probe
-- with trace: false and on rows written before this migration.
ALTER TABLE results ADD COLUMN trace_id text CHECK (trace_id IS NULL OR trace_id ~ '^[0-9a-f]{32}$');

-- alerts.trace_id: the trace of the run the alert is about, kept with the
-- alert as its message and target are, so that the deliverer reads the
-- outbox alone.
ALTER TABLE alerts ADD COLUMN trace_id text CHECK (trace_id IS NULL OR trace_id ~ '^[0-9a-f]{32}$');

-- latest_results is r.* as 0001 created it, which Postgres expanded then:
-- the same view again, so that it has the new column (at its end).
CREATE OR REPLACE VIEW latest_results AS
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
