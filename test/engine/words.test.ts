/** An event's words as a replay shows them: one line, cut at a word, its control characters made visible. */
import { describe, expect, it } from 'vitest';
import { WORDS_MAX, hostWords, oneLine, shorter } from '../../engine/replay/words.js';

describe('oneLine', () => {
  it('keeps a short text as it is, trimmed', () => {
    expect(oneLine('  Draft the pilot plan ', 40)).toBe('Draft the pilot plan');
  });

  it('cuts a long text at the last word that fits, and marks the cut', () => {
    expect(oneLine('Draft the pilot plan for the Acme rollout next week', 24)).toBe('Draft the pilot plan…');
    expect(oneLine('Draft the pilot plan for the Acme rollout next week', 24).length).toBeLessThanOrEqual(24);
  });

  it('cuts inside a word when no word ends late enough', () => {
    expect(oneLine('Supercalifragilisticexpialidocious indeed', 12)).toBe('Supercalifr…');
  });

  it('makes control characters visible, so an escape sequence cannot act and a newline cannot break the line', () => {
    expect(oneLine('one\ntwo\tthree \u001b[31mred', 40)).toBe('one␊two␉three ␛[31mred');
    expect(oneLine('abc\u202edef\u0085', 40)).toBe('abc<U+202E>def<U+0085>');
  });

  it('never leaves half of a surrogate pair at the cut', () => {
    expect(oneLine(`${'x'.repeat(9)}😀😀😀`, 11)).toBe(`${'x'.repeat(9)}…`);
  });

  it('reads no more of a huge text than it can show', () => {
    expect(oneLine('word '.repeat(100_000), 30)).toBe(`${'word '.repeat(5).trim()}…`);
  });
});

describe('shorter', () => {
  it('cuts a quote inside its marks, so it keeps its closing one', () => {
    expect(shorter('“Thanks for making time today, Daniel.”', 24)).toBe('“Thanks for making…”');
    expect(shorter('result {"summary":"x"}', 40)).toBe('result {"summary":"x"}');
  });
});

describe('hostWords', () => {
  it("quotes the user's text, at most WORDS_MAX characters of it", () => {
    const says = hostWords({ type: 'task.started', session_id: 's', task_id: 't', text: 'plan '.repeat(1_000), at: 1 })!;
    expect(says.length).toBeLessThanOrEqual(WORDS_MAX);
    expect(says).toMatch(/^“plan plan .*plan…”$/);
  });
});
