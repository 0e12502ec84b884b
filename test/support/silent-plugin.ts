/**
 * A plugin that takes jobs and never answers them, for the process tests of ownership: it holds its
 * integration's job stream (through a balancer or at one node) and, when the stream ends, opens it again
 * from its cursor (Last-Event-ID), as a plugin does; it never says that it runs a job, nor how one ended, so
 * each delivery lease runs out and the job is delivered again until its deadline.
 */
import type { Integration } from './process-cluster.js';
import { SseConnection } from './sse.js';

export interface SilentPlugin {
  /** The job frames received on every stream it opened, in order: the job and the frame's id. */
  received(): Array<{ readonly job_id: string; readonly id: string }>;
  /** Streams opened so far (200 answers). */
  opened(): number;
  /** Whether its newest stream is open now. */
  open(): boolean;
  stop(): void;
}

/** Opens the stream at `base()` (asked again at each reconnect), a tenth of a second after the last one ended. */
export function silentPlugin(base: () => string, integration: Integration): SilentPlugin {
  const streams: SseConnection[] = [];
  let stopped = false;
  const received = () => streams.flatMap((stream) => stream.replies.map(({ id, json }) => ({ id: id!, job_id: String(json.job_id) })));
  void (async () => {
    while (!stopped) {
      const lastEventId = received().at(-1)?.id;
      const url = `${base()}/api/v1/assistant/integrations/${integration.integration_id}/stream`;
      const stream = await SseConnection.open(url, {
        token: integration.relay_token,
        ...(lastEventId === undefined ? {} : { lastEventId }),
      }).catch(() => undefined);
      if (stream !== undefined) {
        streams.push(stream);
        if (stopped) stream.close();
        await stream.untilEnded(600_000).catch(() => undefined);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  return {
    received,
    opened: () => streams.filter(({ status }) => status === 200).length,
    open: () => streams.at(-1)?.status === 200 && !streams.at(-1)!.ended,
    stop() {
      stopped = true;
      streams.at(-1)?.close();
    },
  };
}
