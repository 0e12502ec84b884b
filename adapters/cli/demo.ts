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
 * and gets the call's summary as a BYO job. It prints the timeline and where to look next, then stops
 * everything and exits 0; with `--keep` it stays up for `assistant-relay chat` and friends until Ctrl-C.
 *
 * Each part is the real one over loopback HTTP, as a deployment would run it, only in one process; a
 * second run pairs afresh and revokes the integration of the run before.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { CapabilityProfile, IntegrationView } from '../../protocol/index.js';
import { approvalsAgent, insightsAgent } from '../agents/index.js';
import { createBackendRelay, type BackendRelay } from '../backend/relay.js';
import { AssistantKeys, ClientKeysFile, keyringOfFile, readKeysFile, storedKeys, writeKeysFile, type AssistantKeysFile } from '../../storage/keys-file.js';
import { FormAClient } from '../client/form-a.js';
import { FormBClient, type ConversationEntry } from '../client/form-b.js';
import { JobsClient } from '../client/jobs.js';
import { pairAsAssistant, pairAsClient, type ConfirmSas } from '../client/pairing.js';
import { createAssistantHost } from '../host/host.js';
import { builtinReasoner } from '../reasoners/index.js';
import { SAMPLE_CALL, playCall, readTranscript, summarizeCall, summaryLines } from './call.js';
import { followTask, textOf } from './chat.js';
import { integrationClient } from './client.js';
import { parseDuration, readFlags } from './flags.js';
import { closeOnSignals, exitOnFatal, jsonLogger, readTokenFile } from './service.js';
import { Timeline } from './timeline.js';

export const DEMO_USAGE = `usage: assistant-relay demo [--keep] [--data DIR] [--transcript FILE] [--pace D]
  Runs the whole system on this machine (what \`npm start\` does): a backend relay, a host in Form A with
  a paired plugin (builtin reasoner), a host in Form B, and a client that pairs, probes, plays a call with
  live insights, chats with an approval step, and gets the call's summary as a BYO job; then it stops.
  --keep                   stay up afterwards for \`assistant-relay chat\` and the rest, until Ctrl-C
  --data DIR               the folder of its logs, keys and token (default data)
  --transcript FILE        the call to play, one "Speaker: text" line each (default the bundled sample)
  --pace D                 the time between two lines of the call (default 200ms)
Each flag may also be set as ASSISTANT_RELAY_<FLAG>.`;

const FLAGS = { keep: { type: 'boolean' }, data: { type: 'string' }, transcript: { type: 'string' }, pace: { type: 'string' } } as const;

/** The ports it tries first, so that a kept system is where the README says; a busy one gives way to a free one. */
const PORTS = { hostA: 8787, backend: 8788, hostB: 8789 } as const;
const PROVIDER = 'assistant-relay';
/** The pairing sides read each other often: both are in this process, and a person is watching. */
const PAIRING_POLL_MS = 50;

/** Where each part keeps what it writes. */
function filesIn(data: string) {
  return {
    data,
    backend: join(data, 'backend.db'),
    hostA: join(data, 'assistant-relay.db'),
    plugin: join(data, 'assistant-relay.plugin.db'),
    hostB: join(data, 'form-b.db'),
    token: join(data, 'token'),
    clientKeys: join(data, 'client-keys.json'),
    assistantKeys: join(data, 'assistant-keys.json'),
    log: join(data, 'demo.log'),
  };
}
type Files = ReturnType<typeof filesIn>;

export async function demoCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  const flags = readFlags(argv, FLAGS, env);
  const files = filesIn(flags('data') ?? 'data');
  const lines = readTranscript(flags('transcript') ?? SAMPLE_CALL);
  const paceMs = parseDuration('pace', flags('pace') ?? '200ms');
  const keep = flags('keep') === true;
  const token = readTokenFile(files.token, { create: true });
  const logger = jsonLogger('info', files.log);
  const timeline = new Timeline();
  const parts: Array<{ close(): Promise<void> }> = [];
  const closeAll = async () => {
    for (const part of parts.reverse()) await part.close();
  };
  try {
    timeline.text(`assistant-relay: the whole system on this machine; what it writes goes into ${files.data}/\n`);
    const urls = await tour({ files, lines, paceMs, token, logger, timeline, parts, keep });
    timeline.text(whereToLook(files, urls, keep));
  } catch (error) {
    process.stderr.write(`assistant-relay demo: ${(error as Error).message}\n`);
    process.exitCode = 1;
    await closeAll();
    return;
  }
  if (keep) closeOnSignals(logger, closeAll);
  else await closeAll();
}

interface Tour {
  readonly files: Files;
  readonly lines: readonly string[];
  readonly paceMs: number;
  readonly token: string;
  readonly logger: Logger;
  readonly timeline: Timeline;
  /** Every part started, to be closed in reverse. */
  readonly parts: Array<{ close(): Promise<void> }>;
  /** Staying up: the Form A host's inspector is served too. */
  readonly keep: boolean;
}

interface Urls {
  readonly backend: string;
  readonly hostA: string;
  readonly hostB: string;
  readonly inspector: string | undefined;
}

async function tour({ files, lines, paceMs, token, logger, timeline: t, parts, keep }: Tour): Promise<Urls> {
  const suffix = crypto.randomUUID().slice(0, 8);
  const onFatal = exitOnFatal(logger);

  // Pairing is open: this backend listens on loopback for the one person running the demo, who has no operator to ask for a ticket.
  const relay = await createBackendRelay({ db: files.backend, pairing: 'open', logger: logger.child({ part: 'backend' }), config: { onFatal } });
  parts.push(relay);
  const backend = await listenPreferring(PORTS.backend, (port) => relay.listen({ port }));
  t.say('backend', `the backend relay listens at ${backend} (event log ${files.backend})`);

  const { client, assistant } = await pair(backend, relay, files, t);
  const integration = integrationClient(backend, client.integration_id, client.client_token);
  const assistantKeys = new AssistantKeys(files.assistantKeys, assistant);

  const reasoner = builtinReasoner({ providerKind: PROVIDER });
  const hostA = await createAssistantHost({
    db: files.hostA,
    token,
    agent: insightsAgent(reasoner, approvalsAgent),
    form: 'A',
    ...(keep ? { inspect: true } : {}),
    logger: logger.child({ part: 'host-a' }),
    onFatal,
    backend: { url: backend, integration: assistant.integration_id, relayToken: assistant.relay_token, reasoner, db: files.plugin, keys: assistantKeys.keyring, rotate: assistantKeys.rotate },
  });
  parts.push(hostA);
  const hostAUrl = await listenPreferring(PORTS.hostA, (port) => hostA.listen({ port }));
  t.say('host A', `the assistant host in Form A listens at ${hostAUrl} (event log ${files.hostA}); agent ${approvalsAgent.name}, insights by the ${reasoner.name} reasoner`);
  const online = await t.step('plugin', 'its first heartbeat', untilOnline(integration));
  t.say('plugin', `online at the backend: ${online.plugin!.name} ${online.plugin!.version}, reasoner ${online.plugin!.reasoner.name} (event log ${files.plugin})`);

  const hostB = await createAssistantHost({ db: files.hostB, token, agent: approvalsAgent, form: 'B', logger: logger.child({ part: 'host-b' }), onFatal });
  parts.push(hostB);
  const hostBUrl = await listenPreferring(PORTS.hostB, (port) => hostB.listen({ port }));
  t.say('host B', `the assistant host in Form B listens at ${hostBUrl} (event log ${files.hostB}); agent ${approvalsAgent.name}`);

  const jobs = new JobsClient(integration, client.integration_id, keyringOfFile(client));
  await probe(jobs, t);

  const formA = new FormAClient({ url: hostAUrl, token });
  parts.push({ close: async () => formA.close() });
  const call = `call-${suffix}`;
  t.say('call', `plays ${lines.length} lines into insights:${call}, one every ${paceMs} ms; insights come back as the call goes`);
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

  const chat = `chat-${suffix}`;
  for (const text of ['Send Daniel the follow-up email with the pricing sheet', '/approve']) {
    t.say('chat A', `you: ${text}`);
    await t.step('chat A', 'the reply', followTask(formA.send(chat, text), (kind, fields) => t.say('chat A', textOf(kind, fields))));
  }

  const formB = new FormBClient({ url: hostBUrl, token });
  const callbacks = await formB.listen();
  parts.push(formB);
  t.say('chat B', `the client's callback listener is at ${callbacks}`);
  const desk = `desk-${suffix}`;
  showConversation(formB, desk, t);
  for (const text of ['Book a 30-minute check-in with Daniel for next Tuesday', '/deny']) {
    t.say('chat B', `you: ${text}`);
    const taskId = await formB.send(desk, text);
    await t.step('chat B', 'the reply', untilAnswered(formB, desk, taskId));
  }

  const { job, summary } = await t.step(
    'summary',
    'the summary job',
    summarizeCall(jobs, call, lines, (view) => t.say('summary', `BYO job ${view.job_id.slice(0, 8)}…: ${view.state}`)),
  );
  t.say('summary', `opened and checked here (the backend relayed it sealed, ${job.deliveries === 1 ? 'in one delivery' : `in ${job.deliveries} deliveries`} to the plugin):`);
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

/**
 * Pairs a client and an assistant through the backend, as two people would with the code carried from
 * one screen to the other, and writes both keys files. The integration of an earlier run is revoked.
 */
async function pair(backend: string, relay: BackendRelay, files: Files, t: Timeline): Promise<{ client: ClientKeysFile; assistant: AssistantKeysFile }> {
  let handOver!: (code: string) => void;
  const code = new Promise<string>((resolve) => (handOver = resolve));
  const shows: Record<'client' | 'assistant', (sas: string) => void> = { client: () => undefined, assistant: () => undefined };
  const shown = {
    client: new Promise<string>((resolve) => (shows.client = resolve)),
    assistant: new Promise<string>((resolve) => (shows.assistant = resolve)),
  };
  // Each side's person, played here: they look at the other screen, and confirm only if it shows the same string.
  const person =
    (side: 'client' | 'assistant', other: 'client' | 'assistant'): ConfirmSas =>
    async (sas) => {
      shows[side](sas);
      const theirs = await shown[other];
      t.say('pairing', `the ${side} shows ${sas}; its person looks at the ${other}'s ${theirs} and ${theirs === sas ? 'confirms they match' : 'says no: they differ'}`);
      return theirs === sas;
    };
  const clientSide = pairAsClient({
    backend,
    providerKind: PROVIDER,
    pollMs: PAIRING_POLL_MS,
    onCode: (given) => {
      t.say('pairing', `the client shows the pairing code ${given}; it is given to the assistant's side`);
      handOver(given);
    },
    confirmSas: person('client', 'assistant'),
  });
  const assistantSide = code.then((given) => pairAsAssistant({ backend, code: given, pollMs: PAIRING_POLL_MS, confirmSas: person('assistant', 'client') }));
  const [client, assistant] = await t.step('pairing', 'both sides to confirm', Promise.all([clientSide, assistantSide]));
  // Both people said yes, so the strings are the same: a pairing whose strings differ never gets here.
  t.say('pairing', `short authentication string ${client.sas} on the client, ${assistant.sas} on the assistant: the same, so no one is in the middle`);

  const earlier = earlierPairing(files.clientKeys);
  const now = Date.now();
  const common = { version: 1 as const, backend, integration_id: client.integration_id, provider_kind: client.provider_kind };
  const written = {
    client: { kind: 'assistant-relay/client-keys' as const, ...common, client_token: client.token, keys: [storedKeys(client.keys, now)] },
    assistant: { kind: 'assistant-relay/assistant-keys' as const, ...common, relay_token: assistant.token, keys: [storedKeys(assistant.keys, now)] },
  };
  writeKeysFile(files.clientKeys, written.client);
  writeKeysFile(files.assistantKeys, written.assistant);
  t.say('pairing', `paired: integration ${client.integration_id}; keys in ${files.clientKeys} (client) and ${files.assistantKeys} (assistant), mode 0600`);
  if (earlier !== undefined && (await relay.backend.integrations.revoke(earlier)) !== undefined) {
    t.say('pairing', `the integration of the run before, ${earlier}, is revoked`);
  }
  return written;
}

/** The integration a keys file left by an earlier run names, if there is a readable one. */
function earlierPairing(file: string): string | undefined {
  if (!existsSync(file)) return undefined;
  try {
    return readKeysFile(file, ClientKeysFile).integration_id;
  } catch {
    return undefined;
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
async function probe(jobs: JobsClient, t: Timeline): Promise<void> {
  const created = await jobs.create({ purpose: 'capability_probe', payload: {}, deadline_ms: 30_000 });
  t.say('probe', `capability_probe job ${created.job_id.slice(0, 8)}… (BYO: sealed, as every job of a paired integration): ${created.state}`);
  const done = await t.step('probe', 'the capability profile', jobs.follow(created));
  const profile = CapabilityProfile.parse(done.result);
  t.say('probe', `${done.state}: skills ${profile.skills.map((skill) => skill.name).join(', ')}; ${profile.limits.max_concurrent_jobs} job at a time, payloads up to ${profile.limits.max_payload_bytes} bytes (opened here: the backend relayed it sealed)`);
}

/** Prints what the conversation shows as it changes: the typing indicator, tool calls, messages, errors. */
function showConversation(client: FormBClient, session: string, t: Timeline): void {
  let shown = 0;
  let typing: string | undefined;
  client.conversation(session).subscribe(({ context }) => {
    if (context.typing?.label !== typing) {
      typing = context.typing?.label;
      if (typing !== undefined) t.say('chat B', `  … ${typing} (the typing indicator shows)`);
    }
    for (const entry of context.entries.slice(shown)) if (entry.kind !== 'user') t.say('chat B', lineOf(entry));
    shown = context.entries.length;
  });
}

function lineOf(entry: Exclude<ConversationEntry, { kind: 'user' }>): string {
  switch (entry.kind) {
    case 'assistant':
      return textOf('reply', { text: entry.text });
    case 'tool_call':
      return textOf('progress', { status: 'tool_call', label: entry.label });
    case 'error':
      return textOf('error', { code: entry.code, message: entry.message });
  }
}

/** Resolves once the conversation has the assistant's answer (or an error) to the message `taskId`. */
function untilAnswered(client: FormBClient, session: string, taskId: string): Promise<void> {
  const store = client.conversation(session);
  const answered = () => store.getSnapshot().context.entries.some((entry) => entry.task_id === taskId && (entry.kind === 'assistant' || entry.kind === 'error'));
  return new Promise((resolve) => {
    if (answered()) return resolve();
    const subscription = store.subscribe(() => {
      if (!answered()) return;
      subscription.unsubscribe();
      resolve();
    });
  });
}

/** The closing notes: where each part wrote, and what to run next. */
function whereToLook(files: Files, urls: Urls, keep: boolean): string {
  const lines = [
    '',
    'Where to look next:',
    `  ${files.backend}  the backend relay's event log (integrations, pairings, jobs)`,
    `  ${files.hostA}  the Form A host's event log (the call, the chat); ${files.plugin} the plugin's`,
    `  ${files.hostB}  the Form B host's event log (the conversation and its callback deliveries)`,
    `  ${files.log}  every part's JSON log`,
    `  ${files.clientKeys}, ${files.assistantKeys}  the pairing's keys and tokens (private files)`,
    `  npx assistant-relay replay --db ${files.hostA}   each session, task and callback delivery: its events and states`,
    `  npx assistant-relay replay --db ${files.backend} --job JOB   a job's, on the backend`,
    urls.inspector === undefined
      ? `  npx assistant-relay inspect --db ${files.hostA}  the same as statecharts in a browser page, scrubbed event by event`
      : `  ${urls.inspector}  the inspector: the Form A host's sessions as statecharts, live`,
  ];
  if (!keep) {
    lines.push('', 'Run `npm start -- --keep` to leave it all running and chat with it.');
    return lines.join('\n');
  }
  lines.push(
    '',
    'Everything is still running; Ctrl-C stops it. Try:',
    `  npx assistant-relay chat --url ${urls.hostA} --token-file ${files.token}`,
    `      (approvals agent: ask for something, then /approve or /deny)`,
    `  npx assistant-relay call --url ${urls.hostA} --token-file ${files.token} --transcript samples/sales-call.txt --keys ${files.clientKeys}`,
    `  npx assistant-relay integrations --keys ${files.clientKeys}`,
    `  curl -H "Authorization: Bearer $(cat ${files.token})" ${urls.hostA}/v1/sessions/SESSION`,
  );
  return lines.join('\n');
}
