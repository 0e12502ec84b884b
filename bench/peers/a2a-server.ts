/**
 * Bench peer: an A2A server built as the @a2a-js/sdk sample agent is (AgentExecutor +
 * DefaultRequestHandler + InMemoryTaskStore, JSON-RPC transport on the SDK's express integration),
 * doing the bench's echo turn.
 *
 *   node --import tsx bench/peers/a2a-server.ts [--port N]
 *
 * A turn is one `SendStreamingMessage` (v1.0's name for v0.3's `message/stream`) answered as SSE:
 * the task (submitted), one status update (working), an artifact holding the user's text, and the
 * completed status update, which ends the stream. That is the SDK sample's way to end a streamed
 * task with an answer.
 *
 * The text "__idle__" instead leaves the task working until it is cancelled or its client goes
 * away; either way the task ends canceled, so its stream and event bus are released.
 *
 * stdout: exactly one line, {"listening":"http://127.0.0.1:PORT"}. SIGTERM/SIGINT: close, exit 0.
 */
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import express, { type NextFunction, type Request, type Response } from 'express';
import { A2A_PROTOCOL_VERSION, AGENT_CARD_PATH, TaskState, type AgentCard, type Part, type TaskStatus } from '@a2a-js/sdk';
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryTaskStore,
  STATE_HEADERS_KEY,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
} from '@a2a-js/sdk/server';
import { UserBuilder, agentCardHandler, jsonRpcHandler } from '@a2a-js/sdk/server/express';

const IDLE_TEXT = '__idle__';

const { values } = parseArgs({ options: { port: { type: 'string', default: '0' } } });
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(`--port must be an integer from 0 to 65535, got ${JSON.stringify(values.port)}\n`);
  process.exit(2);
}

/**
 * Each JSON-RPC request's response, by its headers object. The SDK's JSON-RPC handler never looks
 * at a client going away (an SSE stream lasts until its task ends), and the executor sees only a
 * ServerCallContext; the default context builder keeps `req.headers` itself in `state`, so the
 * headers object is the one thing both sides hold.
 */
const responses = new WeakMap<object, Response>();
function rememberResponse(req: Request, res: Response, next: NextFunction): void {
  responses.set(req.headers, res);
  next();
}

function status(state: TaskState): TaskStatus {
  return { state, message: undefined, timestamp: new Date().toISOString() };
}

function textOf(parts: readonly Part[]): string {
  let text = '';
  for (const part of parts) if (part.content?.$case === 'text') text += part.content.value;
  return text;
}

class EchoExecutor implements AgentExecutor {
  /** Wake-ups of idle tasks, by task id. */
  private readonly idle = new Map<string, () => void>();

  execute = async (context: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const { taskId, contextId, userMessage } = context;
    const text = textOf(userMessage.parts);
    // The SDK requires a stream to begin with the task (or a lone message).
    bus.publish(
      AgentEvent.task(
        context.task ?? {
          id: taskId,
          contextId,
          status: status(TaskState.TASK_STATE_SUBMITTED),
          artifacts: [],
          history: [userMessage],
          metadata: undefined,
        },
      ),
    );
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: status(TaskState.TASK_STATE_WORKING), metadata: undefined }));
    if (text === IDLE_TEXT) {
      await this.idleUntilCancelledOrGone(taskId, context);
      bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: status(TaskState.TASK_STATE_CANCELED), metadata: undefined }));
      return;
    }
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId,
        contextId,
        artifact: {
          artifactId: 'reply',
          name: 'reply',
          description: '',
          parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
          metadata: undefined,
          extensions: [],
        },
        append: false,
        lastChunk: true,
        metadata: undefined,
      }),
    );
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: status(TaskState.TASK_STATE_COMPLETED), metadata: undefined }));
  };

  cancelTask = async (taskId: string): Promise<void> => {
    // A task that is not idle is about to complete by itself; the handler then reports it not cancelable.
    this.idle.get(taskId)?.();
  };

  private idleUntilCancelledOrGone(taskId: string, context: RequestContext): Promise<void> {
    const headers = context.context.state.get(STATE_HEADERS_KEY);
    const res = typeof headers === 'object' && headers !== null ? responses.get(headers) : undefined;
    return new Promise((resolve) => {
      const wake = (): void => {
        this.idle.delete(taskId);
        res?.off('close', wake);
        resolve();
      };
      this.idle.set(taskId, wake);
      if (res === undefined) return;
      if (res.destroyed) wake();
      else res.once('close', wake);
    });
  }
}

const httpServer = createServer();

// Kept-alive sockets as every contender keeps them (60 s): Node's 5 s default races a client reusing one.
httpServer.keepAliveTimeout = 60_000;

// Listening first, so the card can name the real URL.
httpServer.listen(port, '127.0.0.1', () => {
  const address = httpServer.address();
  if (address === null || typeof address === 'string') throw new Error('unexpected server address');
  const url = `http://127.0.0.1:${address.port}`;
  const card: AgentCard = {
    name: 'bench-a2a-echo',
    description: 'Replies with the text it was given, after one working status update.',
    supportedInterfaces: [{ url: `${url}/`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION }],
    provider: undefined,
    version: '0.0.0',
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: 'echo',
        name: 'Echo',
        description: 'Streams one working status update, then completes with the text it was given as an artifact.',
        tags: ['bench'],
        examples: ['hello'],
        inputModes: ['text/plain'],
        outputModes: ['text/plain'],
        securityRequirements: [],
      },
    ],
    signatures: [],
  };
  const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new EchoExecutor());
  const app = express();
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler }));
  app.use(rememberResponse, jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
  httpServer.on('request', app);
  process.stdout.write(`${JSON.stringify({ listening: url })}\n`);
});

function stop(): void {
  httpServer.close();
  // Open SSE streams (idle tasks) would otherwise keep close() waiting.
  httpServer.closeAllConnections();
  process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
