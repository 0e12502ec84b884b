/**
 * Insights replies (4.4 rule 3): one short sentence, or `none`. The engine enforces it on every
 * `message` of an `insights:` session, so a chatty agent cannot flood the Insights tab:
 *   1. whitespace runs (newlines included) become one space, and the text is trimmed;
 *   2. the text is cut after its first sentence: the first `.`, `!`, `?` or `…` followed by a space;
 *   3. a sentence longer than the cap is cut at the last space before it and ends with `…`;
 *   4. nothing left: `none`.
 * The sentence and the cut are exported: a reasoner that quotes by the same rules writes insights this never cuts.
 */
import { LIMITS, type ReplyBody } from '../../protocol/index.js';

const SENTENCE_END = /(?<=[.!?…]) /;

/** `text`'s sentences by rules 1 and 2, each trimmed; none for blank text. */
export function sentencesOf(text: string): string[] {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat === '' ? [] : flat.split(SENTENCE_END);
}

/** `text` if it fits `maxChars`, else cut at the last space that leaves room for a closing `…` (rule 3). */
export function cutAtWord(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const room = text.slice(0, maxChars - 1);
  const space = room.lastIndexOf(' ');
  return `${(space > 0 ? room.slice(0, space) : room).trimEnd()}…`;
}

export function insightsSentence(text: string, maxChars: number = LIMITS.insightsReplyMaxChars): string {
  const sentence = sentencesOf(text)[0];
  return sentence === undefined ? 'none' : cutAtWord(sentence, maxChars);
}

/** A reply as an `insights:` session carries it: a `message` is cut to its one sentence; other statuses pass. */
export function asInsight<R extends ReplyBody>(reply: R): R {
  return reply.status === 'message' ? { ...reply, reply_text: insightsSentence(reply.reply_text) } : reply;
}
