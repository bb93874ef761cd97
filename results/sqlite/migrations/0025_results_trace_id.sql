-- 0025: the W3C trace each operation's requests carried (SPEC §10.1), so
-- that a run can be found in the provider's own traces. Like 0001 to 0024,
-- this file never changes once shipped.

-- trace_id: the run's trace id, 32 lower-case hex digits; NULL for a probe
-- with trace: false and on rows written before this migration.
ALTER TABLE results ADD COLUMN trace_id TEXT CHECK (trace_id IS NULL OR length(trace_id) = 32);

-- alerts.trace_id: the trace of the run the alert is about, kept with the
-- alert as its message and target are, so that the deliverer reads the
-- outbox alone.
ALTER TABLE alerts ADD COLUMN trace_id TEXT CHECK (trace_id IS NULL OR length(trace_id) = 32);
