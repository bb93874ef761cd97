// A small MCP server on the official TypeScript SDK, for tests that must
// meet what its servers do: node tsserver.cjs PORT, with NODE_PATH naming
// the node_modules that hold @modelcontextprotocol/sdk and zod. It serves
// Streamable HTTP at http://127.0.0.1:PORT/mcp, with sessions, an event
// store (so every request's stream opens with a priming event that has an
// id) and a retry interval of 200 ms. Its tools:
//   poll      closes the tools/call stream (SSE polling, MCP 2025-11-25)
//             and answers 300 ms later, on the GET that resumes it;
//   echo      {message: string}, answers "Echo: <message>";
//   ask       asks the client for input on the standalone GET stream
//             (elicitation/create unrelated to the call) and waits for it;
//   ask-checked asks through elicitInput, which refuses a client without
//             the elicitation capability: an isError result;
//   task-only declares execution.taskSupport: required.
'use strict';
const http = require('node:http');
const { randomUUID } = require('node:crypto');
const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js');
const { StreamableHTTPServerTransport } = require('@modelcontextprotocol/sdk/server/streamableHttp.js');
const { InMemoryEventStore } = require('@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js');
const { InMemoryTaskStore } = require('@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js');
const { ElicitResultSchema } = require('@modelcontextprotocol/sdk/types.js');
const { z } = require('zod');

const port = Number(process.argv[2]);
const transports = new Map();

function newServer() {
  const taskStore = new InMemoryTaskStore();
  const server = new McpServer({ name: 'toolpulse-ts-test', version: '1.0.0' },
    { capabilities: { tasks: { requests: { tools: { call: {} } } } }, taskStore });
  server.registerTool('poll', { description: 'Answers after the client polls.' }, async (extra) => {
    if (extra.closeSSEStream) extra.closeSSEStream();
    await new Promise((r) => setTimeout(r, 300));
    return { content: [{ type: 'text', text: 'polled' }] };
  });
  server.registerTool('echo', { description: 'Echoes a message.', inputSchema: { message: z.string() } },
    async ({ message }) => ({ content: [{ type: 'text', text: 'Echo: ' + message }] }));
  const question = {
    mode: 'form', message: 'Which city?',
    requestedSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  };
  // ask sends the request whatever the client declared, unrelated to the
  // call, so the transport puts it on the standalone GET stream.
  server.registerTool('ask', { description: 'Asks the user.' }, async () => {
    const answer = await server.server.request({ method: 'elicitation/create', params: question }, ElicitResultSchema);
    return { content: [{ type: 'text', text: JSON.stringify(answer) }] };
  });
  // ask-checked asks through elicitInput, which first checks the client's
  // capabilities and fails the call when it has no elicitation.
  server.registerTool('ask-checked', { description: 'Asks the user, if it can.' }, async () => {
    const answer = await server.server.elicitInput(question);
    return { content: [{ type: 'text', text: JSON.stringify(answer) }] };
  });
  server.experimental.tasks.registerToolTask('task-only', {
    description: 'Runs only as a task.', execution: { taskSupport: 'required' },
  }, {
    createTask: async (extra) => ({ task: await extra.taskStore.createTask({ ttl: 60000 }) }),
    getTask: async (extra) => ({ task: await extra.taskStore.getTask(extra.taskId) }),
    getTaskResult: async (extra) => extra.taskStore.getTaskResult(extra.taskId),
  });
  return server;
}

const httpServer = http.createServer(async (req, res) => {
  if (!req.url.startsWith('/mcp')) { res.writeHead(404).end(); return; }
  const sid = req.headers['mcp-session-id'];
  let transport = sid ? transports.get(sid) : undefined;
  if (!transport) {
    if (req.method !== 'POST' || sid) {
      res.writeHead(sid ? 404 : 400, { 'Content-Type': 'application/json' })
        .end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'No valid session' }, id: null }));
      return;
    }
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      eventStore: new InMemoryEventStore(),
      retryInterval: 200,
      onsessioninitialized: (id) => transports.set(id, transport),
    });
    transport.onclose = () => { if (transport.sessionId) transports.delete(transport.sessionId); };
    await newServer().connect(transport);
  }
  await transport.handleRequest(req, res);
});
httpServer.listen(port, '127.0.0.1', () => console.log('listening on ' + port));
process.on('SIGTERM', () => process.exit(0));
