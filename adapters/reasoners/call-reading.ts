/**
 * What the builtin reasoner reads in a call's transcript, by English keyword rules (a stand-in, not a model):
 * each question, and each sentence worth noting as a `Finding` with the line at which it became known, so that
 * live insights are the findings of the newest line and a summary is all of them. The rules:
 *   - a question is a sentence ending in `?`; it is answered when someone else speaks next, and goes unanswered
 *     when its asker speaks next (known then) or the call ends on it;
 *   - a concern is a statement (not a question) with a worry word; a sentence that points back ("That is my
 *     main concern") stands for the sentence before it;
 *   - a risk is the reply to a question about what could go wrong (stop, block, risk, …): its longest statement;
 *   - a decision and a commitment are statements with their words; an offer ("we can …") that the other side
 *     accepts at once ("Please do") is an offer taken, known at the acceptance;
 *   - a figure (digits or number words) or a date (a weekday, a month, "next week", "end of …") is noted;
 *   - a sentence is one finding, the most important it can be (the order of `FINDING_KINDS`).
 */
import { sentencesOf } from '../../machines/chat/insights.js';

export interface Utterance {
  readonly speaker: string;
  readonly text: string;
}

/** Most important first. */
export const FINDING_KINDS = ['concern', 'risk', 'unanswered', 'decision', 'commitment', 'offer', 'figure', 'date'] as const;
export type FindingKind = (typeof FINDING_KINDS)[number];

export interface Finding {
  readonly kind: FindingKind;
  readonly speaker: string;
  /** The sentence, as said. */
  readonly sentence: string;
  /** The index of the line at which it became known; the number of lines for a question the call ended on. */
  readonly known: number;
}

export interface Question {
  readonly speaker: string;
  readonly sentence: string;
  readonly answered: boolean;
}

export interface CallReading {
  /** The lines with something said, in order. */
  readonly lines: readonly Utterance[];
  readonly questions: readonly Question[];
  /** In the order they became known. */
  readonly findings: readonly Finding[];
}

const WORRY =
  /\b(risks?|risky|concerns?|concerned|worried|worries|problems?|issues?|delays?|delayed|blockers?|blocked|expensive|over budget)\b/i;
const RISK_QUESTION = /\b(risks?|stop|block|blockers?|prevent|wrong|worr(y|ied)|concerns?|problems?)\b/i;
const DECISION = /\b(decided|decision|we agree|agreed|let's go with|we'll go with|go ahead with)\b/i;
const COMMITMENT = /\b(I'll|I will|we'll|we will|follow up|to ?do|action item)\b/i;
const OFFER = /\b(I|we) can\b/i;
const ACCEPTANCE = /^(please do|that would help|yes|sure|sounds good|great|perfect|ok|okay)\b/i;
// "one" is left out: it is a pronoun as often as a number.
const FIGURE =
  /\d|\b(two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|million|billion|percent|dozen)\b/i;
const DATE =
  /\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|april|may|june|july|august|september|october|november|december|(next|this|last) (week|month|quarter|year)|end of|deadline)\b/i;
const POINTS_BACK = /^(that|this|it)\b/i;

const isQuestion = (sentence: string) => sentence.endsWith('?');

export function readCall(transcript: readonly Utterance[]): CallReading {
  const lines = transcript.filter((u) => u.text.trim().length > 0);
  const said = lines.map((u) => sentencesOf(u.text));
  const questions: Question[] = [];
  const found: Finding[] = [];
  said.forEach((sentences, i) => {
    const { speaker } = lines[i]!;
    const next = lines[i + 1];
    const statements = sentences.filter((s) => !isQuestion(s));
    for (const sentence of sentences.filter(isQuestion)) {
      const answered = next !== undefined && next.speaker !== speaker;
      questions.push({ speaker, sentence, answered });
      if (!answered) found.push({ kind: 'unanswered', speaker, sentence, known: next === undefined ? lines.length : i + 1 });
    }
    sentences.forEach((sentence, j) => {
      if (isQuestion(sentence)) return;
      const concern = WORRY.test(sentence);
      const quoted = concern && j > 0 && POINTS_BACK.test(sentence) && !isQuestion(sentences[j - 1]!) ? sentences[j - 1]! : sentence;
      const kind = concern
        ? 'concern'
        : DECISION.test(sentence)
          ? 'decision'
          : COMMITMENT.test(sentence)
            ? 'commitment'
            : FIGURE.test(sentence)
              ? 'figure'
              : DATE.test(sentence)
                ? 'date'
                : undefined;
      if (kind !== undefined) found.push({ kind, speaker, sentence: quoted, known: i });
    });
    const asked = i > 0 && lines[i - 1]!.speaker !== speaker ? said[i - 1]!.filter(isQuestion) : [];
    const longest = statements.reduce<string | undefined>((a, b) => (a === undefined || b.length > a.length ? b : a), undefined);
    if (longest !== undefined && asked.some((q) => RISK_QUESTION.test(q)))
      found.push({ kind: 'risk', speaker, sentence: longest, known: i });
    const offer = statements.find((s) => OFFER.test(s));
    if (offer !== undefined && next !== undefined && next.speaker !== speaker && ACCEPTANCE.test(said[i + 1]![0] ?? '')) {
      found.push({ kind: 'offer', speaker, sentence: offer, known: i + 1 });
    }
  });
  return { lines, questions, findings: mostImportant(found) };
}

/** Each sentence once, as the most important finding it is, in the order findings became known. */
function mostImportant(found: readonly Finding[]): Finding[] {
  const rank = (f: Finding) => FINDING_KINDS.indexOf(f.kind);
  const best = new Map<string, Finding>();
  for (const finding of found) {
    const key = `${finding.speaker}\n${finding.sentence}`;
    const before = best.get(key);
    if (before === undefined || rank(finding) < rank(before)) best.set(key, finding);
  }
  return [...best.values()].sort((a, b) => a.known - b.known || rank(a) - rank(b));
}
