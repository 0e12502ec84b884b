/**
 * The words of an event, for a person reading a replay: what the user said, what the assistant answered
 * (or the error in its place), a job's purpose and a short result or error. Each is one line of at most
 * `WORDS_MAX` characters, cut at a word and with its control characters made visible: a log's text may
 * hold anything, and it goes to terminals and pages (an escape sequence must not act, a newline must not
 * break a line). A person's words are in quotes (“…”), what describes an event is not.
 */
import type { DomainEvent } from '../../machines/chat/events.js';
import type { BackendEvent } from '../../machines/reasoning/backend-events.js';
import type { PluginEvent } from '../../machines/reasoning/plugin-job-events.js';

/** What a step keeps of an event's words: enough to know it by, never a whole 100 KB message. */
export const WORDS_MAX = 200;

/** C0 and C1 controls, and the format characters that reorder or hide text (bidi overrides, zero widths). */
const INVISIBLE = /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g;

function visible(char: string): string {
  const code = char.charCodeAt(0);
  // C0 controls and DEL have pictures of their own (␊, ␛, ␡); the rest are named by their code point.
  if (code < 0x20) return String.fromCharCode(0x2400 + code);
  if (code === 0x7f) return '\u2421';
  return `<U+${code.toString(16).toUpperCase().padStart(4, '0')}>`;
}

/** `text` on one line of at most `max` characters: cut at a word when one ends late enough, and marked `…` when cut. */
export function oneLine(text: string, max: number): string {
  // Only the start can be shown: a long text is looked at no further than that.
  const line = text
    .trim()
    .slice(0, max * 2)
    .replace(INVISIBLE, visible);
  if (line.length <= max) return line;
  let cut = line.slice(0, max - 1);
  const space = cut.lastIndexOf(' ');
  if (space >= max / 2) cut = cut.slice(0, space);
  // Half of a surrogate pair is no character.
  else if (/[\ud800-\udbff]$/.test(cut)) cut = cut.slice(0, -1);
  return `${cut.trimEnd()}…`;
}

/** Words a step keeps, cut shorter still to fit a narrower place: a quote keeps its closing mark. */
export function shorter(says: string, max: number): string {
  if (says.length <= max) return says;
  return says.startsWith('“') && says.endsWith('”') ? `“${oneLine(says.slice(1, -1), max - 2)}”` : oneLine(says, max);
}

/** A person's words (the user's, the assistant's reply), in quotes. */
function quoted(text: string): string {
  return `“${oneLine(text, WORDS_MAX - 2)}”`;
}

type Reply = Extract<DomainEvent, { type: 'reply.queued' }>['reply'];

function replyWords(reply: Reply): string | undefined {
  if (reply.status === 'message') return quoted(reply.reply_text);
  if (reply.status === 'errored') return oneLine(`${reply.error_code}: ${reply.error_message}`, WORDS_MAX);
  return reply.status === 'typing' || reply.status === 'tool_call' ? oneLine(`${reply.status} ${reply.label}`, WORDS_MAX) : undefined;
}

/** A host event's words: a user message's text, a reply's. */
export function hostWords(event: DomainEvent): string | undefined {
  switch (event.type) {
    case 'task.started':
    case 'message.received':
      return quoted(event.text);
    case 'task.progressed':
    case 'task.settled':
    case 'reply.queued':
      return replyWords(event.reply);
    case 'delivery.failed':
      return oneLine(event.outcome, WORDS_MAX);
    default:
      return undefined;
  }
}

/** A backend event's words: a job's purpose, its result (`sealed`: a BYO envelope no one here can read) or its error. */
export function backendWords(event: BackendEvent, sealed: boolean): string | undefined {
  switch (event.type) {
    case 'job.created':
      return event.byo ? `${event.purpose}, sealed (BYO)` : event.purpose;
    case 'job.completed':
      return sealed ? 'result sealed (BYO)' : oneLine(`result ${JSON.stringify(event.result)}`, WORDS_MAX);
    case 'job.failed':
      return oneLine(`${event.error.code}: ${event.error.message}`, WORDS_MAX);
    default:
      return undefined;
  }
}

/** A plugin event's words: the job's purpose as received, and the result or error it posted (a BYO job's, sealed). */
export function pluginWords(event: PluginEvent, sealed: boolean): string | undefined {
  switch (event.type) {
    case 'plugin.job_received': {
      const { purpose, byo } = event.job;
      return typeof purpose === 'string' ? (byo === true ? `${purpose}, sealed (BYO)` : purpose) : undefined;
    }
    case 'plugin.job_finished':
      if ('error' in event.outcome) return oneLine(`${event.outcome.error.code}: ${event.outcome.error.message}`, WORDS_MAX);
      return sealed ? 'result sealed (BYO)' : oneLine(`result ${JSON.stringify(event.outcome.result)}`, WORDS_MAX);
    default:
      return undefined;
  }
}
