/** Lists of TCP ports such as `8080,9000-9100`: how an operator restricts loopback callbacks to some ports. */

/** A run of ports, both ends included: `[8080, 8080]`, `[9000, 9100]`. */
export type PortRange = readonly [first: number, last: number];

/** Parses `8080,9000-9100` (spaces around entries allowed); throws on a bad entry or an empty list. */
export function parsePortRanges(text: string): PortRange[] {
  return portRanges(
    text.split(',').map((entry): number | PortRange => {
      const match = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(entry.trim());
      if (match === null) throw new Error(`"${entry.trim()}" is not a port or a range of ports such as 9000-9100`);
      const first = Number(match[1]);
      return match[2] === undefined ? first : [first, Number(match[2])];
    }),
  );
}

/** Checks ports and ranges (1 to 65535, a range's first port not above its last) and makes each a range. */
export function portRanges(entries: ReadonlyArray<number | PortRange>): PortRange[] {
  if (entries.length === 0) throw new Error('the list of ports is empty');
  return entries.map((entry) => {
    const [first, last] = typeof entry === 'number' ? [entry, entry] : entry;
    if (!isPort(first) || !isPort(last)) throw new Error(`${formatRange([first, last])} is not a port from 1 to 65535`);
    if (first > last) throw new Error(`${formatRange([first, last])} runs backwards`);
    return [first, last] as const;
  });
}

export function inPortRanges(ranges: readonly PortRange[], port: number): boolean {
  return ranges.some(([first, last]) => port >= first && port <= last);
}

/** `8080, 9000-9100`. */
export function formatPortRanges(ranges: readonly PortRange[]): string {
  return ranges.map(formatRange).join(', ');
}

function formatRange([first, last]: PortRange): string {
  return first === last ? String(first) : `${first}-${last}`;
}

function isPort(n: number): boolean {
  return Number.isInteger(n) && n >= 1 && n <= 65535;
}
