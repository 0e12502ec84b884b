/** A generated section of a Markdown document: the text between its two marker comments, rewritten whole. */

export interface Markers {
  /** The opening comment, which also says what writes the section. */
  readonly begin: string;
  readonly end: string;
}

/** The document with the section between `markers` replaced by `body` (the markers themselves stay). */
export function withSection(markdown: string, markers: Markers, body: string): string {
  const start = markdown.indexOf(markers.begin);
  const end = markdown.indexOf(markers.end);
  if (start < 0 || end < start) throw new Error(`the document has no section ${markers.begin} … ${markers.end} (its markers are missing)`);
  return markdown.slice(0, start) + markers.begin + '\n' + body + markdown.slice(end);
}
