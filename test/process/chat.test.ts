/**
 * `assistant-relay chat` as a person uses it (issue 11): in a terminal (tmux), typing a line and reading
 * the reply from the screen; the host SIGKILLed while the chat is idle, and again under a pending reply,
 * and started again each time, the chat saying so when it happens, reconnecting, and showing the reply's
 * fate (`interrupted`) in the conversation.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { ServeChild, useChildFolder } from '../support/child.js';
import { eventually } from '../support/wait.js';

const folder = useChildFolder();
const CLI = fileURLToPath(new URL('../../dist/adapters/cli/main.js', import.meta.url));
const TMUX = `assistant-relay-chat-${process.pid}`;
const tmux = (...args: string[]) => execFileSync('tmux', args, { encoding: 'utf8' });
const screen = () => tmux('capture-pane', '-p', '-t', TMUX);
const count = (text: string, part: string) => text.split(part).length - 1;
/** What the terminal shows once `done` holds of it (a capture is a process: every 50 ms is enough). */
const onScreen = (what: string, done: (text: string) => boolean) =>
  eventually(`the screen to show ${what}`, screen, done, { timeoutMs: 15_000, everyMs: 50 });

afterEach(() => {
  try {
    tmux('kill-session', '-t', TMUX);
  } catch {
    // Ended already.
  }
});

it('a person chats in a terminal: types, reads replies, and sees the connection drop and come back', { timeout: 60_000 }, async () => {
  const dir = folder();
  const db = join(dir, 'relay.db');
  const tokenFile = join(dir, 'token');
  writeFileSync(tokenFile, 'chat-test-token\n', { mode: 0o600 });
  const serveArgs = (url?: string) => {
    const port = url === undefined ? '0' : new URL(url).port;
    return ['--port', port, '--db', db, '--token-file', tokenFile, '--agent', 'script', '--log-level', 'silent'];
  };
  const first = await ServeChild.start(serveArgs());
  tmux(
    'new-session',
    '-d',
    '-s',
    TMUX,
    '-x',
    '160',
    '-y',
    '40',
    `${process.execPath} ${CLI} chat --url ${first.url} --token-file ${tokenFile} --session s-1`,
  );
  await onScreen('the greeting', (text) => text.includes('chat in session s-1'));

  tmux('send-keys', '-t', TMUX, 'hello there', 'Enter');
  await onScreen('the reply', (text) => text.includes('assistant: hello there'));
  expect(screen()).toContain('… thinking');

  // The host killed while the chat is idle: it says so then, not when the next line is sent.
  await first.stop('SIGKILL');
  await onScreen('the drop while idle', (text) => count(text, 'connection lost: reconnecting') === 1);
  const second = await ServeChild.start(serveArgs(first.url));
  await onScreen('the reconnection', (text) => count(text, '(reconnected)') === 1);

  // A reply that takes its time, and the host killed under it.
  tmux('send-keys', '-t', TMUX, '-l', JSON.stringify({ script: [{ sleep: 10_000 }, { message: 'too late' }] }));
  tmux('send-keys', '-t', TMUX, 'Enter');
  await new Promise((resolve) => setTimeout(resolve, 500));
  await second.stop('SIGKILL');
  await onScreen('the drop', (text) => count(text, 'connection lost: reconnecting') === 2);
  const third = await ServeChild.start(serveArgs(first.url));
  const after = await onScreen('the reconnection and the fate of the reply', (text) => {
    return count(text, '(reconnected)') === 2 && text.includes('error interrupted');
  });
  expect(after).not.toContain('assistant: too late');

  tmux('send-keys', '-t', TMUX, 'still here?', 'Enter');
  await onScreen('the next reply', (text) => text.includes('assistant: still here?'));
  tmux('send-keys', '-t', TMUX, 'C-d');
  await new Promise((resolve) => setTimeout(resolve, 500));
  await third.stop('SIGTERM');
});
