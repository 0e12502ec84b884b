/**
 * Insights replies (4.4 rule 3): one short sentence, or `none`. The engine enforces it on every
 * `message` of an `insights:` session, so a chatty agent cannot flood the Insights tab:
 *   1. whitespace runs (newlines included) become one space, and the text is trimmed;
 *   2. the text is cut after its first sentence: the first `.`, `!`, `?` or `…` followed by a space;
 *   3. a sentence longer than the cap is cut at the last space before it and ends with `…`;
 *   4. nothing left: `none`.
 */
import { LIMITS, type ReplyBody } from '../../protocol/index.js';

const SENTENCE_END = /[.!?…](?= )/;

export function insightsSentence(text: string, maxChars: number = LIMITS.insightsReplyMaxChars): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const end = SENTENCE_END.exec(flat);
  const sentence = end === null ? flat : flat.slice(0, end.index + 1);
  if (sentence.length === 0) return 'none';
  if (sentence.length <= maxChars) return sentence;
  const room = sentence.slice(0, maxChars - 1);
  const space = room.lastIndexOf(' ');
  return `${(space > 0 ? room.slice(0, space) : room).trimEnd()}…`;
}

/** A reply as an `insights:` session carries it: a `message` is cut to its one sentence; other statuses pass. */
export function asInsight<R extends ReplyBody>(reply: R): R {
  return reply.status === 'message' ? { ...reply, reply_text: insightsSentence(reply.reply_text) } : reply;
}
