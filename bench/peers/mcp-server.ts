/**
 * Bench peer: an MCP server over the SDK's Streamable HTTP transport, doing the bench's echo turn.
 *
 *   node --import tsx bench/peers/mcp-server.ts [--port N]
 *
 * Tool `echo` ({ text }): one `notifications/progress` for the request's progressToken, then the
 * result `{ content: [{ type: 'text', text }] }`. Stateful sessions as in the SDK's
 * simpleStreamableHttp example: one transport + McpServer per session, each with the SDK's
 * in-memory event store (resumability; it keeps every event for the session's life, and as its
 * replay orders ids of the form `${stream}_${Date.now()}_${random}` as strings, a resume can skip
 * or reorder events stored in the same millisecond: the resume scenario counts those turns as lost).
 * Plain node:http in front; POST bodies are parsed here and
 * handed to `handleRequest` as `parsedBody`, as express.json() does in the example.
 *
 * GET /healthz: 200 {"sessions": N}. stdout: exactly one line, {"listening":"http://127.0.0.1:PORT"}.
 * SIGTERM/SIGINT: close every session, exit 0.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { parseArgs } from 'node:util';
import * as z from 'zod/v4';
import { InMemoryEventStore } from '@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

const MAX_BODY_BYTES = 1 << 20;

const { values } = parseArgs({ options: { port: { type: 'string', default: '0' } } });
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(`--port must be an integer from 0 to 65535, got ${JSON.stringify(values.port)}\n`);
  process.exit(2);
}

function buildServer(): McpServer {
  const server = new McpServer({ name: 'bench-mcp-echo', version: '0.0.0' });
  server.registerTool(
    'echo',
    { description: 'Replies with the text it was given, after one progress notification', inputSchema: { text: z.string() } },
    async ({ text }, extra) => {
      const progressToken = extra._meta?.progressToken;
      if (progressToken !== undefined) {
        await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress: 1, total: 1 } });
      }
      return { content: [{ type: 'text', text }] };
    },
  );
  return server;
}

const sessions = new Map<string, StreamableHTTPServerTransport>();

function sendJsonRpcError(res: ServerResponse, status: number, code: number, message: string): void {
  const body = JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
}

/** Resolves with the parsed JSON body, or undefined once an error response has been sent. */
function readJsonBody(req: IncomingMessage, res: ServerResponse): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      // Past the limit the rest is read and dropped, so the 413 can still go out on this socket.
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('error', reject);
    req.on('end', () => {
      if (size > MAX_BODY_BYTES) {
        sendJsonRpcError(res, 413, -32000, 'Request body too large');
        resolve(undefined);
        return;
      }
      try {
        resolve(JSON.parse(Buffer.concat(chunks, size).toString('utf8')));
      } catch {
        sendJsonRpcError(res, 400, -32700, 'Parse error: Invalid JSON');
        resolve(undefined);
      }
    });
  });
}

async function handlePost(req: IncomingMessage, res: ServerResponse, sessionId: string | undefined): Promise<void> {
  const body = await readJsonBody(req, res);
  if (body === undefined) return;
  const existing = sessionId === undefined ? undefined : sessions.get(sessionId);
  if (existing !== undefined) return existing.handleRequest(req, res, body);
  if (sessionId !== undefined) return sendJsonRpcError(res, 404, -32001, 'Session not found');
  if (!isInitializeRequest(body)) return sendJsonRpcError(res, 400, -32000, 'Bad Request: No valid session ID provided');

  const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
    sessionIdGenerator: randomUUID,
    eventStore: new InMemoryEventStore(),
    // Registered before the initialize response goes out, so the client's next request finds it.
    onsessioninitialized: (id) => {
      sessions.set(id, transport);
    },
  });
  transport.onclose = () => {
    if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
  };
  await buildServer().connect(transport);
  await transport.handleRequest(req, res, body);
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = req.url === undefined ? '' : req.url.split('?', 1)[0];
  if (path === '/healthz' && req.method === 'GET') {
    // The session count lets a check see that closed sessions are really gone.
    const body = JSON.stringify({ sessions: sessions.size });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
    return;
  }
  if (path !== '/mcp') {
    res.writeHead(404).end();
    return;
  }
  const header = req.headers['mcp-session-id'];
  const sessionId = typeof header === 'string' ? header : undefined;
  if (req.method === 'POST') return handlePost(req, res, sessionId);
  if (req.method === 'GET' || req.method === 'DELETE') {
    if (sessionId === undefined) return sendJsonRpcError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
    const transport = sessions.get(sessionId);
    if (transport === undefined) return sendJsonRpcError(res, 404, -32001, 'Session not found');
    return transport.handleRequest(req, res);
  }
  res.writeHead(405, { allow: 'GET, POST, DELETE' }).end();
}

const httpServer = createServer((req, res) => {
  handle(req, res).catch(() => {
    if (!res.headersSent) sendJsonRpcError(res, 500, -32603, 'Internal server error');
    else res.destroy();
  });
});

// Kept-alive sockets as every contender keeps them (60 s): Node's 5 s default races a client reusing one.
httpServer.keepAliveTimeout = 60_000;

httpServer.listen(port, '127.0.0.1', () => {
  const address = httpServer.address();
  if (address === null || typeof address === 'string') throw new Error('unexpected server address');
  process.stdout.write(`${JSON.stringify({ listening: `http://127.0.0.1:${address.port}` })}\n`);
});

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  httpServer.close();
  // Closing a transport ends its open SSE responses; copy first since onclose edits the map.
  await Promise.allSettled([...sessions.values()].map((transport) => transport.close()));
  httpServer.closeAllConnections();
  process.exit(0);
}
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());
