-- The duration buckets of probe_hours also as the text Postgres prints
-- for them, kept by Postgres itself from duration_buckets, so that stats
-- reads each hour's buckets as stored text instead of printing the jsonb
-- anew on every call: printing the 24,000 objects of a day of 1,000
-- probes cost the server some 100 ms of CPU a stats call, copying their
-- text under 10 ms. Every writer keeps writing duration_buckets alone.
-- Adding the column rewrites the table under its lock: 2.5 s for the
-- 169,000 rows of 7 days of 1,000 probes, while runs being recorded wait.
ALTER TABLE probe_hours ADD COLUMN duration_buckets_text text
    GENERATED ALWAYS AS (duration_buckets::text) STORED;
