-- 0009: silences (SPEC §8). A silence mutes the alerts of the probes its
-- matchers cover from starts_at until ends_at, or until expired_at when it
-- is expired by hand; the probes still run and are recorded. Like 0001 to
-- 0008, this file never changes once shipped.
--
-- matchers is a JSON object {"probes": [...], "labels": {"k": "v"}}, either
-- key left out when empty.
CREATE TABLE silences (
    id         INTEGER PRIMARY KEY,
    matchers   TEXT    NOT NULL CHECK (json_valid(matchers)),
    starts_at  TEXT    NOT NULL,
    ends_at    TEXT    NOT NULL CHECK (ends_at > starts_at),
    reason     TEXT    NOT NULL,
    created_at TEXT    NOT NULL,
    expired_at TEXT
);
