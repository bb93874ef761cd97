-- probe_hours keeps its duration buckets as two arrays instead of a jsonb
-- object: bucket_ms[i] is a bucket (hourly.Bucket, in milliseconds) and
-- bucket_runs[i] the runs that fell in it. stats reads every whole hour of
-- its window (some 24,000 rows for 1,000 probes over a day); printing
-- jsonb as text, and parsing that text, was most of its cost. Arrays go
-- out in their binary form (array_send) and a run's upsert still edits one
-- element in place (array_position).

ALTER TABLE probe_hours
    ADD COLUMN bucket_ms   bigint[],
    ADD COLUMN bucket_runs bigint[];

UPDATE probe_hours h SET (bucket_ms, bucket_runs) = (
    SELECT coalesce(array_agg(e.key::bigint ORDER BY e.key::bigint), '{}'),
           coalesce(array_agg(e.value::bigint ORDER BY e.key::bigint), '{}')
    FROM jsonb_each_text(h.duration_buckets) AS e);

ALTER TABLE probe_hours
    DROP COLUMN duration_buckets,
    ALTER COLUMN bucket_ms SET NOT NULL,
    ALTER COLUMN bucket_runs SET NOT NULL,
    ADD CHECK (cardinality(bucket_ms) = cardinality(bucket_runs));
