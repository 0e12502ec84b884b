/** Port lists as operators write them (`--callback-loopback-ports 8080,9000-9100`). */
import { describe, expect, it } from 'vitest';
import { formatPortRanges, inPortRanges, parsePortRanges } from '../../protocol/port-ranges.js';

describe('parsePortRanges', () => {
  it('reads single ports and ranges, spaces around entries allowed', () => {
    expect(parsePortRanges('8080, 9000-9100,1,65535')).toEqual([
      [8080, 8080],
      [9000, 9100],
      [1, 1],
      [65535, 65535],
    ]);
  });

  it.each([
    ['', /not a port/],
    ['8080,', /not a port/],
    ['http', /not a port/],
    ['80.5', /not a port/],
    ['-80', /not a port/],
    ['0', /1 to 65535/],
    ['65536', /1 to 65535/],
    ['9000-70000', /1 to 65535/],
    ['9100-9000', /backwards/],
  ])('refuses %j', (text, message) => {
    expect(() => parsePortRanges(text)).toThrow(message);
  });
});

describe('a port list', () => {
  const ranges = parsePortRanges('8080,9000-9100');

  it('holds its ports and the ends of its ranges, nothing else', () => {
    expect([8079, 8080, 8081, 8999, 9000, 9050, 9100, 9101].filter((port) => inPortRanges(ranges, port))).toEqual([8080, 9000, 9050, 9100]);
  });

  it('reads back as it was written', () => {
    expect(formatPortRanges(ranges)).toBe('8080, 9000-9100');
  });
});
