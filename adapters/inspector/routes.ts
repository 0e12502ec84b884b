/**
 * The inspector's API (registered under `/api`): the entities of the log with their states, one entity's
 * timeline, the statechart pictures, and `/api/live`, an SSE stream that says the log's new end whenever
 * it grows. Each answer first folds what the log gained, so it is never older than the request.
 */
import type { FastifyPluginAsync } from 'fastify';
import { KEEPALIVE_COMMENT, OPEN_COMMENT } from '../../protocol/index.js';
import type { SubscriberTransport } from '../../engine/core/subscription-actor.js';
import type { LogWatch } from './live.js';
import type { InspectorModel } from './model.js';
import { STATECHARTS, statechartSvg } from '../../visualizations/statecharts.js';
import { sendError } from '../http/errors.js';
import { streamTransport } from '../http/sse-transport.js';

/** `: keep-alive` on a quiet live stream, as the host's streams default to. */
const KEEPALIVE_MS = 20_000;
/** A live reader this far behind is not reading: dropped (the page reconnects). */
const MAX_QUEUED_BYTES = 64 * 1024;

export interface InspectorApiOptions {
  readonly model: InspectorModel;
  readonly watch: LogWatch;
}

export const inspectorApi: FastifyPluginAsync<InspectorApiOptions> = async (app, { model, watch }) => {
  // Laid out once per machine: ELK takes a while, and the pictures never change.
  const pictures = new Map<string, Promise<string>>();
  const streams = new Set<SubscriberTransport>();

  app.get('/entities', async () => {
    await model.refresh();
    return {
      log: model.kind ?? null,
      db: model.path,
      end: model.end,
      ...(model.fault === undefined ? {} : { fault: model.fault }),
      entities: model.entities(),
    };
  });

  app.get<{ Params: { key: string } }>('/entities/:key', async (request, reply) => {
    await model.refresh();
    return model.timeline(request.params.key) ?? sendError(reply, 'not_found', 'no entity has this key in the log');
  });

  app.get<{ Params: { name: string } }>('/statecharts/:name.svg', async (request, reply) => {
    const { name } = request.params;
    if (!STATECHARTS.some((statechart) => statechart.name === name)) return sendError(reply, 'not_found', 'no statechart has this name');
    if (!pictures.has(name)) pictures.set(name, statechartSvg(name));
    return reply.type('image/svg+xml; charset=utf-8').send(await pictures.get(name));
  });

  // No HEAD: a stream's answer is its body, and a HEAD request would wait for headers that never come.
  app.get('/live', { exposeHeadRoute: false }, async (_request, reply) => {
    await model.refresh();
    const stream = streamTransport(reply);
    streams.add(stream);
    const tell = (end: number) => {
      if (stream.buffered > MAX_QUEUED_BYTES) return stream.destroy();
      stream.write(`data: ${JSON.stringify({ end })}\n\n`);
    };
    stream.write(OPEN_COMMENT);
    tell(model.end);
    const stop = watch.listen(tell);
    const keepalive = setInterval(() => stream.write(KEEPALIVE_COMMENT), KEEPALIVE_MS).unref();
    const forget = () => {
      streams.delete(stream);
      stop();
      clearInterval(keepalive);
    };
    stream.onClose(forget);
    // A reader gone before this point has had its 'close' already.
    if (stream.closed) forget();
  });

  // A closing server waits for its connections: the live streams end first.
  app.addHook('preClose', async () => {
    for (const stream of streams) stream.end();
  });
};
