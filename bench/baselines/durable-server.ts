/**
 * How both durable baselines (durable-turns.ts, jobs-durable.ts) serve: on loopback, saying
 * {"listening": url} on stdout when ready, like the relay's CLI; at SIGTERM or SIGINT their streams are
 * let go, the server closes, then the log, and the process exits.
 */
import type { FastifyInstance } from 'fastify';

export async function serveUntilSignal(
  app: FastifyInstance,
  port: number,
  log: { readonly close: () => void },
  /** What holds the server open: its streams. */
  letGo: () => void,
): Promise<void> {
  await app.listen({ port, host: '127.0.0.1' });
  const { port: bound } = app.server.address() as { port: number };
  process.stdout.write(`${JSON.stringify({ listening: `http://127.0.0.1:${bound}` })}\n`);
  const stop = () => {
    letGo();
    void app.close().then(() => {
      log.close();
      process.exit(0);
    });
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
