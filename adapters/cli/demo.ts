/**
 * `assistant-relay demo` (what `npm start` runs): the whole system on this machine, with embedded
 * defaults, everything it writes under one folder (`./data`):
 *
 *   backend relay ── paired plugin (builtin reasoner) ── host in Form A (insights + the approvals agent)
 *                                                        host in Form B (the approvals agent)
 *
 * and a client that walks through it: it pairs with the plugin (both sides show the short
 * authentication string, and each side's person confirms it matches the other's), probes the plugin's capabilities, plays a recorded call into its `insights:`
 * session with live insights, chats in Form A and in Form B (typing, a tool call, an approval step),
 * and gets the call's summary as a BYO job. It prints the timeline, ends what it began (its sessions; its plugin
 * says it stops, so the integration shows offline), stops everything, says where to look next and exits 0; with
 * `--keep` it stays up for `assistant-relay chat` and friends until Ctrl-C, and ends what it began then.
 *
 * Each part is the real one over loopback HTTP, as a deployment would run it, only in one process; a
 * second run pairs afresh and revokes the integration of the run before.
 */
import type { Logger } from 'pino';
import { CapabilityProfile, IntegrationView } from '../../protocol/index.js';
import { integrationState } from '../../machines/reasoning/integration.js';
import { approvalsAgent, insightsAgent } from '../agents/index.js';
import { createBackendRelay } from '../backend/relay.js';
import { AssistantKeys, keyringOfFile } from '../../storage/keys-file.js';
import { FormAClient } from '../client/form-a.js';
import { FormBClient } from '../client/form-b.js';
import { JobsClient } from '../client/jobs.js';
import { createAssistantHost } from '../host/host.js';
import { REASONER_FLAGS, reasonerFrom, type ReasonerFlag } from '../reasoners/index.js';
import type { Reasoner } from '../reasoners/reasoner.js';
import { SAMPLE_CALL, playCall, readTranscript, summarizeCall, summaryLines } from './call.js';
import { followTask, textOf } from './chat.js';
import { integrationClient } from './client.js';
import { showConversation, conversationAnswered } from './demo-conversation.js';
import { DEMO_LOG_BYTES, filesIn, reasonerNote, whereToLook, type Files, type Urls } from './demo-notes.js';
import { pair } from './demo-pairing.js';
import { parseDuration, readFlags } from './flags.js';
import { closeOnSignals, exitOnFatal, jsonLogger, readTokenFile } from './service.js';
import { DemoTimeline } from './timeline.js';

export const DEMO_USAGE = `usage: assistant-relay demo [--keep] [--data DIR] [--transcript FILE] [--pace D] [--reasoner NAME]
  Runs the whole system on this machine (what \`npm start\` does): a backend relay, a host in Form A with
  a paired plugin, a host in Form B, and a client that pairs, probes, plays a call with live insights,
  chats with an approval step, and gets the call's summary as a BYO job; then it stops.
  --keep                   stay up afterwards for \`assistant-relay chat\` and the rest, until Ctrl-C
  --data DIR               the folder of its logs, keys and token (default data)
  --transcript FILE        the call to play, one "Speaker: text" line each (default the bundled sample)
  --pace D                 the time from a line's answer to the next line of the call (default 200ms)
  --reasoner NAME          who reads the call (insights, summary): builtin (keyword rules, no model; the
                           default), openai or command, with its flags as \`assistant-relay plugin --help\` lists
                           them, e.g. --reasoner openai --openai-base-url URL --openai-model M
Each flag may also be set as ASSISTANT_RELAY_<FLAG>.`;

const FLAGS = {
  keep: { type: 'boolean' },
  data: { type: 'string' },
  transcript: { type: 'string' },
  pace: { type: 'string' },
  reasoner: { type: 'string' },
  ...REASONER_FLAGS,
} as const;

/** The ports it tries first, so that a kept system is where the README says; a busy one gives way to a free one. */
const PORTS = { hostA: 8787, backend: 8788, hostB: 8789 } as const;
const PROVIDER = 'assistant-relay';

/** Something the demo started, or began: closed (ended) in reverse order. */
interface Part {
  close(): Promise<void>;
}

export async function demoCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  const flags = readFlags(argv, FLAGS, env);
  const files = filesIn(flags('data') ?? 'data');
  const lines = readTranscript(flags('transcript') ?? SAMPLE_CALL);
  const paceMs = parseDuration('pace', flags('pace') ?? '200ms');
  const keep = flags('keep') === true;
  const reasonerFlags = Object.fromEntries((Object.keys(REASONER_FLAGS) as ReasonerFlag[]).map((flag) => [flag, flags(flag)]));
  const reasoner = reasonerFrom(flags('reasoner') ?? 'builtin', { providerKind: PROVIDER, flags: reasonerFlags }, env);
  const token = readTokenFile(files.token, { create: true });
  // Every part's lines, requests included (debug): one run's worth, bounded.
  const logger = jsonLogger('debug', files.log, DEMO_LOG_BYTES);
  const timeline = new DemoTimeline();
  const parts: Part[] = [];
  const closeAll = async () => {
    for (const part of parts.reverse()) await part.close();
  };
  let urls: Urls;
  try {
    timeline.text(`assistant-relay: the whole system on this machine; what it writes goes into ${files.data}/\n`);
    urls = await tour({ files, lines, paceMs, token, reasoner, logger, timeline, parts, keep });
  } catch (error) {
    process.stderr.write(`assistant-relay demo: ${(error as Error).message}\n`);
    process.exitCode = 1;
    await closeAll();
    return;
  }
  if (keep) {
    timeline.text(whereToLook(files, urls, keep));
    closeOnSignals(logger, closeAll);
    return;
  }
  await closeAll();
  timeline.text(whereToLook(files, urls, keep));
}

interface Tour {
  readonly files: Files;
  readonly lines: readonly string[];
  readonly paceMs: number;
  readonly token: string;
  readonly reasoner: Reasoner;
  readonly logger: Logger;
  readonly timeline: DemoTimeline;
  /** Every part started and every session begun, to be closed and ended in reverse. */
  readonly parts: Part[];
  /** Staying up: the Form A host's inspector is served too. */
  readonly keep: boolean;
}

async function tour({ files, lines, paceMs, token, reasoner, logger, timeline: t, parts, keep }: Tour): Promise<Urls> {
  const suffix = crypto.randomUUID().slice(0, 8);
  const onFatal = exitOnFatal(logger);

  // Pairing is open: this backend listens on loopback for the one person running the demo, who has no operator to ask for a ticket.
  const relay = await createBackendRelay({
    db: files.backend,
    pairing: 'open',
    logger: logger.child({ part: 'backend' }),
    config: { onFatal },
  });
  parts.push({ close: async () => (await relay.close(), t.say('backend', 'stopped')) });
  const backend = await listenPreferring(PORTS.backend, (port) => relay.listen({ port }));
  t.say('backend', `the backend relay listens at ${backend} (event log ${files.backend})`);

  const { client, assistant } = await pair(backend, relay, PROVIDER, files, t);
  const integration = integrationClient(backend, client.integration_id, client.client_token);
  const assistantKeys = new AssistantKeys(files.assistantKeys, assistant);
  // Read as the plugin has stopped (its last heartbeat said so), before the backend does.
  parts.push({
    close: async () => {
      const known = relay.backend.integrations.integration(client.integration_id);
      t.say('backend', `integration ${client.integration_id}: ${known === undefined ? 'gone' : integrationState(known)}`);
    },
  });

  const hostA = await createAssistantHost({
    db: files.hostA,
    token,
    agent: insightsAgent(reasoner, approvalsAgent),
    form: 'A',
    ...(keep ? { inspect: true } : {}),
    logger: logger.child({ part: 'host-a' }),
    onFatal,
    backend: {
      url: backend,
      integration: assistant.integration_id,
      relayToken: assistant.relay_token,
      reasoner,
      db: files.plugin,
      keys: assistantKeys.keyring,
      rotate: assistantKeys.rotate,
    },
  });
  parts.push({ close: async () => (await hostA.close(), t.say('host A', 'stopped, and its plugin: its last heartbeat told the backend')) });
  const hostAUrl = await listenPreferring(PORTS.hostA, (port) => hostA.listen({ port }));
  t.say(
    'host A',
    `the assistant host in Form A listens at ${hostAUrl} (event log ${files.hostA}); agent ${approvalsAgent.name}, insights by the ${reasoner.name} reasoner`,
  );
  const online = await t.step('plugin', 'its first heartbeat', untilOnline(integration));
  t.say(
    'plugin',
    `online at the backend: ${online.plugin!.name} ${online.plugin!.version}, reasoner ${online.plugin!.reasoner.name} (event log ${files.plugin})`,
  );

  const hostB = await createAssistantHost({
    db: files.hostB,
    token,
    agent: approvalsAgent,
    form: 'B',
    logger: logger.child({ part: 'host-b' }),
    onFatal,
  });
  parts.push({ close: async () => (await hostB.close(), t.say('host B', 'stopped')) });
  const hostBUrl = await listenPreferring(PORTS.hostB, (port) => hostB.listen({ port }));
  t.say('host B', `the assistant host in Form B listens at ${hostBUrl} (event log ${files.hostB}); agent ${approvalsAgent.name}`);

  // The sessions it begins, ended as it stops: a run leaves none open.
  const call = `call-${suffix}`;
  const chat = `chat-${suffix}`;
  const desk = `desk-${suffix}`;
  parts.push({
    close: async () => {
      for (const [host, session] of [
        [hostA, `insights:${call}`],
        [hostA, chat],
        [hostB, desk],
      ] as const)
        await host.endSession(session);
      t.say('stop', `sessions ended: insights:${call} and ${chat} on host A, ${desk} on host B`);
    },
  });

  const jobs = new JobsClient(integration, client.integration_id, keyringOfFile(client));
  await probe(jobs, t);

  const formA = new FormAClient({ url: hostAUrl, token });
  parts.push({ close: async () => formA.close() });
  t.say(
    'call',
    `plays ${lines.length} lines into insights:${call}, each ${paceMs} ms after the one before is answered; insights come back as the call goes`,
  );
  for (const note of reasonerNote(reasoner)) t.say('call', note);
  const insights = await t.step(
    'call',
    'the answers to every line',
    playCall(formA, call, lines, {
      paceMs,
      onLine: (line) => t.say('call', `  ${line}`),
      onInsight: (insight) => t.say('insight', `★ ${insight.text}`),
    }),
    // Playing takes lines × pace: only a wait past that is worth a word.
    { limitMs: 60_000 + lines.length * paceMs, everyMs: 5_000 + lines.length * paceMs },
  );
  t.say('call', `ended: ${insights.length} insights from ${lines.length} lines`);

  for (const text of ['Send Daniel the follow-up email with the pricing sheet', '/approve']) {
    t.say('chat A', `you: ${text}`);
    await t.step(
      'chat A',
      'the reply',
      followTask(formA.send(chat, text), (kind, fields) => t.say('chat A', textOf(kind, fields))),
    );
  }

  const formB = new FormBClient({ url: hostBUrl, token });
  const callbacks = await formB.listen();
  parts.push(formB);
  t.say('chat B', `the client's callback listener is at ${callbacks}`);
  showConversation(formB, desk, t);
  for (const text of ['Book a 30-minute check-in with Daniel for next Tuesday', '/deny']) {
    t.say('chat B', `you: ${text}`);
    const taskId = await formB.send(desk, text);
    await t.step('chat B', 'the reply', conversationAnswered(formB, desk, taskId));
  }

  const { job, summary } = await t.step(
    'summary',
    'the summary job',
    summarizeCall(jobs, call, lines, (view) => t.say('summary', `BYO job ${view.job_id.slice(0, 8)}…: ${view.state}`)),
  );
  t.say(
    'summary',
    `opened and checked here (the backend relayed it sealed, ${job.deliveries === 1 ? 'in one delivery' : `in ${job.deliveries} deliveries`} to the plugin):`,
  );
  t.more(summaryLines(summary));
  return { backend, hostA: hostAUrl, hostB: hostBUrl, inspector: hostA.inspectorUrl };
}

/** Listens on `port`, or on a free one if it is taken. */
async function listenPreferring(port: number, listen: (port: number) => Promise<string>): Promise<string> {
  try {
    return await listen(port);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    return listen(0);
  }
}

/** The integration as the client reads it, once its plugin has heartbeated. */
async function untilOnline(integration: ReturnType<typeof integrationClient>): Promise<IntegrationView> {
  for (;;) {
    const view = await integration.call(IntegrationView, '', { method: 'GET' });
    if (view.state === 'online' && view.plugin !== undefined) return view;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * A `capability_probe` job, sealed like every job of a paired integration (PROTOCOL.md 7.13), and what it
 * says: the client keeps the profile itself (the backend cannot read a BYO probe's result).
 */
async function probe(jobs: JobsClient, t: DemoTimeline): Promise<void> {
  const created = await jobs.create({ purpose: 'capability_probe', payload: {}, deadline_ms: 30_000 });
  t.say(
    'probe',
    `capability_probe job ${created.job_id.slice(0, 8)}… (BYO: sealed, as every job of a paired integration): ${created.state}`,
  );
  const done = await t.step('probe', 'the capability profile', jobs.follow(created));
  const profile = CapabilityProfile.parse(done.result);
  t.say(
    'probe',
    `${done.state}: skills ${profile.skills.map((skill) => skill.name).join(', ')}; ${profile.limits.max_concurrent_jobs} job at a time, payloads up to ${profile.limits.max_payload_bytes} bytes (opened here: the backend relayed it sealed)`,
  );
}
