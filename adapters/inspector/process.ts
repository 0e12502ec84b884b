/**
 * Inspecting an embedded host or backend relay (their `inspect` and `statelyInspector` options): the
 * process's own log read from its file, as `assistant-relay inspect` reads any log, so what is shown is
 * only ever what was committed. The page is served on loopback unless told otherwise, and then behind the
 * process's own token.
 */
import type { FastifyBaseLogger } from 'fastify';
import { InspectorModel } from './model.js';
import { reportToStately, type StatelyInspector } from './stately.js';
import { isLoopback, startInspectorServer, type InspectorServer } from './server.js';

/** `true`: the page on 127.0.0.1, on any free port. */
export type InspectOption = boolean | { readonly port?: number; readonly host?: string };

export interface InspectionOptions {
  /** The process's event log. */
  readonly db: string;
  readonly inspect?: InspectOption | undefined;
  readonly statelyInspector?: StatelyInspector | undefined;
  /** The process's token (a host's, a backend's operator token): the page's on an address other than loopback. */
  readonly token: string | undefined;
}

export interface Inspection {
  /** Where the page is, when `inspect` asked for one. */
  readonly url: string | undefined;
  /** Folds what the log gained, for the Stately inspector: call it on each commit. */
  committed(): void;
  /** Stops serving, reports the last commits, lets go of the log. */
  close(): Promise<void>;
}

function addressOf(inspect: InspectOption | undefined): string {
  return (typeof inspect === 'object' ? inspect.host : undefined) ?? '127.0.0.1';
}

/** Refuses, before anything opens, what cannot be inspected. */
export function checkInspection(options: InspectionOptions): void {
  if (!options.inspect && options.statelyInspector === undefined) return;
  if (options.db === ':memory:')
    throw new TypeError('inspect and statelyInspector read the event log from its file: give db a path, not :memory:');
  const host = addressOf(options.inspect);
  if (options.inspect && !isLoopback(host) && options.token === undefined) {
    throw new TypeError(`inspect on ${host}, not a loopback address, needs the process's token (a backend relay's operatorToken)`);
  }
}

/** Starts what the options ask for (nothing: `undefined`); `checkInspection` has passed. */
export async function startInspection(
  options: InspectionOptions & { readonly epoch: string; readonly logger?: FastifyBaseLogger },
): Promise<Inspection | undefined> {
  const { inspect, statelyInspector, logger } = options;
  if (!inspect && statelyInspector === undefined) return undefined;
  const model = await InspectorModel.open(
    options.db,
    logger === undefined ? {} : { onError: (error) => logger.error({ err: error }, 'reporting to the Stately inspector failed') },
  );
  const stopReporting = statelyInspector === undefined ? undefined : reportToStately(model, statelyInspector);
  let server: InspectorServer | undefined;
  try {
    if (inspect) {
      const host = addressOf(inspect);
      server = await startInspectorServer(model, {
        host,
        port: (typeof inspect === 'object' ? inspect.port : undefined) ?? 0,
        epoch: options.epoch,
        ...(isLoopback(host) ? {} : { token: options.token! }),
        ...(logger === undefined ? {} : { logger }),
      });
    }
  } catch (error) {
    await model.close();
    throw error;
  }
  return {
    url: server?.url,
    committed: () => {
      if (stopReporting !== undefined) void model.refresh();
    },
    async close() {
      await server?.close();
      await model.refresh();
      stopReporting?.();
      await model.close();
    },
  };
}
