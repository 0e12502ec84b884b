/**
 * The inspector served over HTTP: `GET /` the page (visualizations/inspector/page.ts), `/api/…` what it
 * reads (routes.ts), on a fastify instance with what every HTTP surface of ours has (http/app.ts): the
 * time limits and our error body on every failure.
 *
 * On loopback it needs no token, but every request must name a loopback address in its Host header: a
 * page elsewhere could otherwise reach it through a name of its own that resolves to 127.0.0.1 (DNS
 * rebinding). On any other address it needs a token, on every `/api` route; the page itself holds no
 * data, and is what reads the token (from the URL's fragment) to send it.
 */
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { isIP } from 'node:net';
import { LIMITS } from '../../protocol/index.js';
import { classifyAddress } from '../../protocol/ip-address.js';
import { LogWatch } from './live.js';
import type { InspectorModel } from './model.js';
import { INSPECTOR_PAGE, PAGE_CSP } from './page.js';
import { newHttpApp } from '../http/app.js';
import { authPlugin } from '../http/auth.js';
import { sendError } from '../http/errors.js';
import { HTTP_LIMITS } from '../http/limits.js';
import { inspectorApi } from './routes.js';

/** `assistant-relay inspect`'s port when none is given (the host's is 8787, the backend's 8788). */
export const INSPECTOR_PORT = 8790;

export interface InspectorServerOptions {
  /** Default 127.0.0.1. */
  readonly host?: string;
  /** Default 0: any free port. */
  readonly port?: number;
  /** Required on an address other than loopback; with one, every `/api` route asks for it. */
  readonly token?: string;
  /** What `/healthz` answers as the process's epoch. */
  readonly epoch: string;
  readonly logger?: FastifyBaseLogger;
}

export interface InspectorServer {
  /** Where the page is. */
  readonly url: string;
  readonly server: FastifyInstance;
  /** Ends the live streams and stops serving; the model stays open (its owner closes it). */
  close(): Promise<void>;
}

/** `localhost`, or an IP address of the loopback range (127.0.0.0/8, ::1); a name is not, whatever it resolves to. */
export function isLoopback(host: string): boolean {
  const address = host.replace(/^\[(.*)\]$/, '$1');
  return address === 'localhost' || (isIP(address) !== 0 && classifyAddress(address) === 'loopback');
}

function hostnameOf(header: string | undefined): string | undefined {
  return header !== undefined && URL.canParse(`http://${header}`) ? new URL(`http://${header}`).hostname : undefined;
}

/** A percent-encoded UTF-8 character takes up to 12: room for a delivery's or a task's key of the longest ids. */
const MAX_KEY_LENGTH = 12 * (LIMITS.sessionIdMaxLength + LIMITS.taskIdMaxLength) + 64;

export async function startInspectorServer(model: InspectorModel, options: InspectorServerOptions): Promise<InspectorServer> {
  const host = options.host ?? '127.0.0.1';
  const { token } = options;
  if (token === undefined && !isLoopback(host)) throw new TypeError(`the inspector on ${host}, not a loopback address, needs a token`);
  const app = await newHttpApp({
    limits: HTTP_LIMITS,
    // Nothing of the inspector's takes a body.
    bodyLimit: 1024,
    maxParamLength: MAX_KEY_LENGTH,
    epoch: options.epoch,
    ...(options.logger === undefined ? {} : { logger: options.logger }),
  });
  const watch = new LogWatch(model);
  try {
    if (token === undefined) {
      app.addHook('onRequest', async (request, reply) => {
        const named = hostnameOf(request.headers.host);
        if (named === undefined || !isLoopback(named))
          return sendError(reply, 'invalid_request', 'the Host header must name a loopback address: this inspector answers only there');
      });
    }
    app.get('/', (_request, reply) =>
      reply
        .type('text/html; charset=utf-8')
        .header('content-security-policy', PAGE_CSP)
        .header('cache-control', 'no-store')
        .send(INSPECTOR_PAGE),
    );
    await app.register(
      async (api) => {
        if (token !== undefined) await api.register(authPlugin, { token });
        await api.register(inspectorApi, { model, watch });
      },
      { prefix: '/api' },
    );
    const url = await app.listen({ host, port: options.port ?? 0 });
    return { url, server: app, close: () => app.close() };
  } catch (error) {
    await app.close();
    throw error;
  }
}
