-- The fleet-wide decision (SPEC §13): an alert the decider makes about a
-- probe of several locations shows each location's verdict, and is
-- delivered by the decider's outbox, not by a location's.

-- locations: each location's view (location, failing, silent, outcome,
-- code, last_run), in the probe's order; NULL on an alert of one location.
-- decider: the lease of the decider that made it ('_decider'); NULL on an
-- alert a location's run raised, which that location's leader delivers.
ALTER TABLE alerts
    ADD COLUMN locations jsonb,
    ADD COLUMN decider   text;
