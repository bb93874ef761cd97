-- 0013: MCP tool probes (SPEC §10). Every HTTP exchange of an MCP session
-- is an attempt row, and a tool's listed definition is watched for drift
-- as a response's shape is. Like 0001 to 0012, this file never changes
-- once shipped.

-- method: the JSON-RPC method of the exchange ("initialize", "tools/call",
-- "DELETE session"...); NULL for an HTTP probe's attempt. try: which try of
-- the retry loop the row belongs to, from 1; an MCP try makes several
-- rows. NULL on rows written before this migration, where try = number.
ALTER TABLE attempts ADD COLUMN method TEXT;
ALTER TABLE attempts ADD COLUMN try    INTEGER CHECK (try IS NULL OR try >= 1);

-- kind: 'response' for a change of the response's shape (SPEC §5), every
-- row before this migration included; 'definition' for a change of an MCP
-- tool's listed definition. description_before/after: the tool's old and
-- new description, capped, when a definition drift changed it, so that
-- its alert can be rendered after a restart; NULL otherwise.
ALTER TABLE drifts ADD COLUMN kind TEXT NOT NULL DEFAULT 'response'
    CHECK (kind IN ('response', 'definition'));
ALTER TABLE drifts ADD COLUMN description_before TEXT;
ALTER TABLE drifts ADD COLUMN description_after  TEXT;

-- The fingerprint of the tool definition an MCP run listed; NULL for an
-- HTTP probe and for a run that never got the tool's tools/list entry.
ALTER TABLE results ADD COLUMN tool_fingerprint TEXT;

-- Every tool definition each MCP probe has listed, so that the daemon
-- remembers a probe's last definition across restarts and diffs the next
-- against it. definition: the canonical JSON of the watched fields
-- (results/tooldef). Written in the transaction of the run that listed it;
-- `toolpulse baseline reset` deletes a probe's rows.
CREATE TABLE tool_definitions (
    probe         TEXT NOT NULL,
    fingerprint   TEXT NOT NULL,
    definition    TEXT NOT NULL CHECK (json_valid(definition)),
    first_seen_at TEXT NOT NULL,
    last_seen_at  TEXT NOT NULL,
    PRIMARY KEY (probe, fingerprint)
) WITHOUT ROWID;

-- "the probe's latest definition", read once per probe after a start.
CREATE INDEX tool_definitions_last ON tool_definitions (probe, last_seen_at);
