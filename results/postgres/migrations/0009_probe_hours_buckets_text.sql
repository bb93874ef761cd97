-- The duration buckets of probe_hours also as the text Postgres prints
-- for them, kept by Postgres itself from duration_buckets, so that stats
-- reads each hour's buckets as stored text instead of printing the jsonb
-- anew on every call: printing the 24,000 objects of a day of 1,000
-- probes cost the server some 140 ms of a stats call, copying their text
-- some 25 ms. Every writer keeps writing duration_buckets alone.
ALTER TABLE probe_hours ADD COLUMN duration_buckets_text text
    GENERATED ALWAYS AS (duration_buckets::text) STORED;
