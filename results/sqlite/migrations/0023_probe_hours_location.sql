-- 0023: probe_hours per location (SPEC §13), so that stats answers for
-- one location as history does. Like 0001 to 0022, this file never
-- changes once shipped.

-- SQLite cannot change a primary key in place: the table is built anew
-- with location in its key and the rows copied. location comes after
-- hour in the key, so that a probe's hours over every location are
-- still one range of it, read as before when stats names no location.
-- Every row copied becomes 'default', which is what its runs recorded:
-- no daemon wrote another location before 0020, and a single instance
-- runs from 'default'.
CREATE TABLE probe_hours_0023 (
    probe                TEXT    NOT NULL,
    hour                 TEXT    NOT NULL, -- first 13 characters of started_at: '2026-10-26T13'
    location             TEXT    NOT NULL DEFAULT 'default' CHECK (location <> ''),
    runs                 INTEGER NOT NULL CHECK (runs >= 1),
    pass                 INTEGER NOT NULL CHECK (pass >= 0),
    contract_error       INTEGER NOT NULL CHECK (contract_error >= 0),
    unavailable          INTEGER NOT NULL CHECK (unavailable >= 0),
    passed_after_retries INTEGER NOT NULL CHECK (passed_after_retries >= 0),
    retries              INTEGER NOT NULL CHECK (retries >= 0), -- attempts beyond the first
    duration_buckets     TEXT    NOT NULL,
    PRIMARY KEY (probe, hour, location)
) WITHOUT ROWID;

INSERT INTO probe_hours_0023 (probe, hour, location, runs, pass, contract_error, unavailable,
                              passed_after_retries, retries, duration_buckets)
SELECT probe, hour, 'default', runs, pass, contract_error, unavailable,
       passed_after_retries, retries, duration_buckets
FROM probe_hours;

DROP TABLE probe_hours;
ALTER TABLE probe_hours_0023 RENAME TO probe_hours;
