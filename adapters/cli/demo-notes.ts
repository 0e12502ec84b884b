/** What the demo tells its person besides the timeline: where each part writes, who the insights are from, what to run next. */
import { join } from 'node:path';
import type { Reasoner } from '../reasoners/reasoner.js';

/** The bound of `demo.log`: one run's lines (the file starts afresh on each run), at most this many bytes of them. */
export const DEMO_LOG_BYTES = 10 * 1024 * 1024;

/** Where each part keeps what it writes. */
export function filesIn(data: string) {
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
export type Files = ReturnType<typeof filesIn>;

export interface Urls {
  readonly backend: string;
  readonly hostA: string;
  readonly hostB: string;
  readonly inspector: string | undefined;
}

/** Who answers the call's lines and its summary: the builtin is rules, not a model, and the person is told how to use one. */
export function reasonerNote(reasoner: Reasoner): string[] {
  if (reasoner.name !== 'builtin')
    return [
      `insights and the summary come from the ${reasoner.name} reasoner${reasoner.model === undefined ? '' : ` (model ${reasoner.model})`}`,
    ];
  return [
    'insights and the summary come from the builtin reasoner: keyword rules on each sentence, no model. For a model:',
    '  npm start -- --reasoner openai --openai-base-url http://127.0.0.1:11434/v1 --openai-model llama3.2',
    '  (any OpenAI-compatible server: Ollama, vLLM, a hosted API with its key in OPENAI_API_KEY)',
  ];
}

/** The closing notes: where each part wrote, and what to run next. */
export function whereToLook(files: Files, urls: Urls, keep: boolean): string {
  const lines = [
    '',
    'Where to look next:',
    `  ${files.backend}  the backend relay's event log (integrations, pairings, jobs)`,
    `  ${files.hostA}  the Form A host's event log (the call, the chat); ${files.plugin} the plugin's`,
    `  ${files.hostB}  the Form B host's event log (the conversation and its callback deliveries)`,
    `  ${files.log}  this run's JSON log lines of every part (backend, host A with its plugin, host B; each request at debug), at most ${DEMO_LOG_BYTES / 1024 / 1024} MiB`,
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
    'Everything is still running; Ctrl-C stops it (and ends the sessions the demo began). Try:',
    `  npx assistant-relay chat --url ${urls.hostA} --token-file ${files.token}`,
    `      (approvals agent: ask for something, then /approve or /deny)`,
    `  npx assistant-relay call --url ${urls.hostA} --token-file ${files.token} --transcript samples/sales-call.txt --keys ${files.clientKeys}`,
    `  npx assistant-relay integrations --keys ${files.clientKeys}`,
    `  curl -H "Authorization: Bearer $(cat ${files.token})" ${urls.hostA}/v1/sessions/SESSION`,
  );
  return lines.join('\n');
}
