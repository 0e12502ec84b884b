import { afterEach, describe, expect, it } from 'vitest';
import { UsageError } from '../../adapters/cli/flags.js';
import { reasonerFrom, type ReasonerOptions } from '../../adapters/reasoners/index.js';
import { closeReceivers } from '../support/receiver.js';
import { chatServer } from './chat-server.js';
import { CALL, job } from './job.js';

afterEach(closeReceivers);

const from = (name: string, flags: ReasonerOptions['flags'] = {}, env: NodeJS.ProcessEnv = {}) =>
  reasonerFrom(name, { providerKind: 'assistant-relay', flags }, env);
const OLLAMA = { 'openai-base-url': 'http://127.0.0.1:11434/v1', 'openai-model': 'llama3.2' };

function usage(build: () => unknown): string {
  try {
    build();
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as Error).message;
  }
  throw new Error('expected a usage error');
}

describe('reasonerFrom', () => {
  it('builds each reasoner by name', () => {
    expect(from('builtin').name).toBe('builtin');
    expect(from('openai', OLLAMA)).toMatchObject({ name: 'openai', model: 'llama3.2' });
    expect(from('command', { command: '["python3","reason.py"]' }).name).toBe('command');
  });

  it('refuses an unknown name, and a flag that belongs to another reasoner', () => {
    expect(usage(() => from('gpt'))).toBe('--reasoner must be one of builtin, openai, command, not "gpt"');
    expect(usage(() => from('builtin', { 'openai-model': 'x' }))).toBe('--openai-model is for --reasoner openai, not builtin');
    expect(usage(() => from('openai', { ...OLLAMA, command: '["x"]' }))).toBe('--command is for --reasoner command, not openai');
  });

  it.each([
    [{ 'openai-model': 'm' }, '--openai-base-url (or OPENAI_BASE_URL) is required, e.g. http://127.0.0.1:11434/v1 for Ollama'],
    [{ ...OLLAMA, 'openai-base-url': 'localhost:11434' }, '--openai-base-url must be http or https'],
    [{ ...OLLAMA, 'openai-base-url': 'not a url' }, '--openai-base-url must be an absolute URL, not "not a url"'],
    [
      { ...OLLAMA, 'openai-base-url': 'https://user:sk-secret@api.example.com/v1' },
      '--openai-base-url must not carry credentials: put the key in OPENAI_API_KEY or --openai-key-env',
    ],
    [{ ...OLLAMA, 'openai-base-url': 'http://127.0.0.1:11434/v1?x=1' }, '--openai-base-url is a base URL: no query string or fragment'],
    [{ 'openai-base-url': 'http://127.0.0.1:11434/v1' }, '--openai-model (or OPENAI_MODEL) is required, e.g. llama3.2'],
    [{ ...OLLAMA, 'openai-key-env': 'MY-KEY' }, '--openai-key-env must be the name of an environment variable'],
    [{ ...OLLAMA, 'openai-key-env': 'MY_KEY' }, '--openai-key-env names MY_KEY, which is not set'],
    [{ ...OLLAMA, 'openai-stream': 'yes' }, '--openai-stream must be on or off'],
  ])('openai: %j is refused', (flags, message) => {
    expect(usage(() => from('openai', flags))).toBe(message);
  });

  it('openai: a key a header cannot carry is refused without being echoed', () => {
    const message = usage(() => from('openai', OLLAMA, { OPENAI_API_KEY: 'sk-secret\r\nX-Evil: 1' }));
    expect(message).toBe('the API key in OPENAI_API_KEY has characters a header cannot carry');
  });

  it.each([
    [undefined, `--command is required with --reasoner command, e.g. --command '["python3","reason.py"]'`],
    ['python3 reason.py', `--command must be a JSON array of strings, e.g. '["python3","reason.py"]'`],
    ['[]', '--command must be a JSON array of one or more non-empty strings: the program, then its arguments'],
    ['["python3", 1]', '--command must be a JSON array of one or more non-empty strings: the program, then its arguments'],
  ])('command: %j is refused', (command, message) => {
    expect(usage(() => from('command', command === undefined ? {} : { command }))).toBe(message);
  });

  it('openai: base URL, model and key from the environment (the key from --openai-key-env NAME, else OPENAI_API_KEY), sent as the bearer', async () => {
    const server = await chatServer([{ content: JSON.stringify({ insights: [] }) }]);
    const env = { OPENAI_BASE_URL: server.baseUrl, OPENAI_MODEL: 'qwen', OPENAI_API_KEY: 'sk-default', VLLM_KEY: 'sk-vllm' };
    await from('openai', {}, env).reason(job('live_analysis', CALL));
    await from('openai', { 'openai-key-env': 'VLLM_KEY', 'openai-model': 'flagged' }, env).reason(job('live_analysis', CALL));
    expect(server.receiver.requests.map((r) => [r.headers.authorization, JSON.parse(r.body).model])).toEqual([
      ['Bearer sk-default', 'qwen'],
      ['Bearer sk-vllm', 'flagged'],
    ]);
  });

  it('openai: no Authorization header without a key (a local server needs none)', async () => {
    const server = await chatServer([{ content: JSON.stringify({ insights: [] }) }]);
    await from('openai', { ...OLLAMA, 'openai-base-url': server.baseUrl }).reason(job('live_analysis', CALL));
    expect(server.receiver.requests[0]!.headers.authorization).toBeUndefined();
  });
});
