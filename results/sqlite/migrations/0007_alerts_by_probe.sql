-- 0007: each probe's latest alert, for the status page and the API, which
-- show whether the last message about a probe reached its receiver. One
-- search of this index per probe, never a scan of the outbox's history.
-- Like 0001 to 0006, this file never changes once shipped.
CREATE INDEX alerts_by_probe ON alerts (probe, id);
