/**
 * The builtin reasoner's answers about a call, from what `readCall` found in it: the live insights (what the
 * newest line made known, most important first) and the summary a person would write (who spoke, the
 * questions and whether they were answered, what was talked about most, the concerns, the figures and dates;
 * the decisions and next steps in their own lists). Deterministic: the same transcript, the same answer.
 */
import type { z } from 'zod';
import { LIMITS, PURPOSES } from '../../protocol/index.js';
import { cutAtWord } from '../../machines/chat/insights.js';
import { readCall, type Finding, type FindingKind, type Utterance } from './call-reading.js';
import { clip } from './result.js';

type Insight = z.infer<typeof PURPOSES.live_analysis.result>['insights'][number];
type Summary = z.infer<typeof PURPOSES.session_summary.result>;

/** How each finding reads as an insight; the order of `FINDING_KINDS` is the order of importance. */
const INSIGHTS: Record<
  FindingKind,
  { readonly kind: Insight['kind']; readonly confidence: number; readonly lead: (who: string) => string }
> = {
  concern: { kind: 'risk', confidence: 0.8, lead: (who) => `${who} raised a concern` },
  risk: { kind: 'risk', confidence: 0.8, lead: (who) => `${who} named a risk` },
  unanswered: { kind: 'question', confidence: 0.7, lead: (who) => `${who}'s question went unanswered` },
  decision: { kind: 'fact', confidence: 0.65, lead: (who) => `${who} stated a decision` },
  commitment: { kind: 'fact', confidence: 0.6, lead: (who) => `${who} committed to a next step` },
  offer: { kind: 'fact', confidence: 0.6, lead: (who) => `${who}'s offer was accepted` },
  figure: { kind: 'fact', confidence: 0.5, lead: (who) => `${who} mentioned a figure` },
  date: { kind: 'fact', confidence: 0.5, lead: (who) => `${who} mentioned a date` },
};

/** One speaker's share of the words above which the others are to be invited in, once this many words are said. */
const DOMINANT_SHARE = 0.6;
const DOMINANCE_AFTER_WORDS = 100;

/** `"sentence"`, cut at a word to fit `max` characters with its quotes, and closed either way. */
function quoted(sentence: string, max: number): string {
  return `"${cutAtWord(sentence, max - 2)}"`;
}

/** An insight is one sentence the host never cuts (4.4 rule 3): `Daniel raised a concern: "…"`. */
function insightOf(finding: Finding): Insight {
  const { kind, confidence, lead: leadOf } = INSIGHTS[finding.kind];
  // A speaker's name may be long (200 characters): the quote keeps most of the room.
  const lead = `${leadOf(cutAtWord(finding.speaker, 60))}: `;
  return { kind, confidence, text: `${lead}${quoted(finding.sentence, LIMITS.insightsReplyMaxChars - lead.length)}` };
}

/** What the newest line made known, most important first; then a word for a speaker who has said most of the call. */
export function liveInsights(transcript: readonly Utterance[]): Insight[] {
  const { lines, findings } = readCall(transcript);
  const newest = findings.filter((finding) => finding.known === lines.length - 1).map(insightOf);
  const words = new Map<string, number>();
  for (const u of lines) words.set(u.speaker, (words.get(u.speaker) ?? 0) + u.text.split(/\s+/).filter(Boolean).length);
  const total = [...words.values()].reduce((a, b) => a + b, 0);
  const top = [...words.entries()].find(([, count]) => count > DOMINANT_SHARE * total);
  // Said without the share's number, so the same advice reads the same and the agent says it once.
  if (words.size > 1 && total >= DOMINANCE_AFTER_WORDS && top !== undefined) {
    newest.push({
      kind: 'suggestion',
      confidence: 0.4,
      text: `${top[0]} has said over ${DOMINANT_SHARE * 100}% of the words so far: invite the others in.`,
    });
  }
  return newest.sort((a, b) => b.confidence - a.confidence).slice(0, 10);
}

export function callSummary(transcript: readonly Utterance[], notes: string | undefined): Summary {
  const { lines, questions, findings } = readCall(transcript);
  const of = (...kinds: FindingKind[]) => findings.filter((finding) => kinds.includes(finding.kind));
  const speakers = [...new Set(lines.map((u) => u.speaker))];
  const parts = [`${listOf(speakers)} spoke in ${lines.length} ${lines.length === 1 ? 'turn' : 'turns'}.`];
  if (questions.length > 0) {
    const open = questions.filter((q) => !q.answered);
    const askers = listOf([...new Set(questions.map((q) => q.speaker))]);
    const answers =
      open.length === 0
        ? questions.length === 1
          ? 'it was answered'
          : 'each was answered'
        : `${open.length} went unanswered: ${quotes(of('unanswered'))}`;
    parts.push(`${askers} asked ${questions.length} ${questions.length === 1 ? 'question' : 'questions'}; ${answers}.`);
  }
  const topics = topicsOf(lines, speakers);
  if (topics.length > 0) parts.push(`Most mentioned: ${topics.join(', ')}.`);
  const concerns = of('concern', 'risk');
  if (concerns.length > 0) parts.push(`Concerns: ${quotes(concerns)}.`);
  const facts = of('figure', 'date');
  if (facts.length > 0) parts.push(`Figures and dates: ${quotes(facts)}.`);
  if (notes?.trim()) parts.push(`Notes: ${clip(notes.trim(), 1_000)}`);
  return {
    summary: clip(parts.join(' '), 20_000),
    action_items: of('commitment', 'offer')
      .slice(0, 100)
      .map((f) => ({ text: cutAtWord(f.sentence, 1_000), owner: clip(f.speaker, 200) })),
    decisions: of('decision')
      .slice(0, 100)
      .map((f) => cutAtWord(f.sentence, 1_000)),
  };
}

/** `"a" (Daniel); "b" (Maya)` */
function quotes(findings: readonly Finding[]): string {
  return findings.map((f) => `${quoted(f.sentence, 300)} (${f.speaker})`).join('; ');
}

/** `Maya`, `Maya and Daniel`, `Ana, Ben and Cy` */
function listOf(names: readonly string[]): string {
  return names.length <= 1 ? (names[0] ?? 'Nobody') : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`;
}

// Words that say nothing of what a call is about (four letters or more: shorter words are not counted at all).
const PLAIN_WORDS = new Set(
  `about after again also anything because been before being both could does doing down each else even every from going have here into
  just know like many maybe more most much must need only other over really right same should since some something such than that
  that's their them then there there's these they thing things think this those through under until very want well were what when
  where which while will with would your yeah okay today tomorrow week weeks month months year years hour hours time let's it's we're`.split(
    /\s+/,
  ),
);
const TOPICS = 4;

/** The words said most (twice or more), most first and then as they first came; a name keeps its capital. */
function topicsOf(lines: readonly Utterance[], speakers: readonly string[]): string[] {
  const counts = new Map<string, { count: number; capital: boolean }>();
  const names = new Set(speakers.map((s) => s.toLowerCase()));
  for (const u of lines) {
    for (const word of u.text.match(/[A-Za-z][A-Za-z'-]{3,}/g) ?? []) {
      const key = word.toLowerCase();
      if (PLAIN_WORDS.has(key) || names.has(key)) continue;
      const seen = counts.get(key) ?? { count: 0, capital: true };
      counts.set(key, { count: seen.count + 1, capital: seen.capital && word[0] !== key[0] });
    }
  }
  return [...counts.entries()]
    .filter(([, { count }]) => count >= 2)
    .sort((a, b) => b[1].count - a[1].count)
    .slice(0, TOPICS)
    .map(([key, { capital }]) => (capital ? key[0]!.toUpperCase() + key.slice(1) : key));
}
