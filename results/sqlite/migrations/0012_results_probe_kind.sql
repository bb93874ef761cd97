-- 0012: what kind of probe produced each result (SPEC §10): an HTTP
-- endpoint or an MCP tool, and for MCP the tool and the server it was
-- called on, so that history, stats and the API can tell an MCP probe's
-- runs from an HTTP probe's without the config. Like 0001 to 0011, this
-- file never changes once shipped.
--
-- Every row recorded before this version is an HTTP probe's: the column
-- default says so. 'steps' is allowed ahead of the multi-step probes of
-- SPEC §11, so that they need no rebuild of this table.
--
-- mcp_server is the endpoint's scheme, host and path, never the URL's
-- credentials or query. Both MCP columns are NULL exactly when kind is
-- not 'mcp'.
ALTER TABLE results ADD COLUMN kind TEXT NOT NULL DEFAULT 'http'
    CHECK (kind IN ('http', 'mcp', 'steps'));
ALTER TABLE results ADD COLUMN mcp_tool TEXT
    CHECK ((kind = 'mcp') = (mcp_tool IS NOT NULL));
ALTER TABLE results ADD COLUMN mcp_server TEXT
    CHECK ((kind = 'mcp') = (mcp_server IS NOT NULL));
