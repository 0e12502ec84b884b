/** `Retry-After` (RFC 9110 10.2.3), as every client of ours reads it: callbacks, the plugin, the reasoners, the client library. */
// All three HTTP-date formats (RFC 9110 5.6.7) start with a day name; anything else is not a date.
const HTTP_DATE = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun)/;

/** `Retry-After` as ms from `now`: delta-seconds or an HTTP-date; `undefined` when absent, repeated or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now: number): number | undefined {
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) {
    const seconds = Number(text);
    return Number.isSafeInteger(seconds) ? seconds * 1000 : undefined;
  }
  const at = HTTP_DATE.test(text) ? Date.parse(text) : Number.NaN;
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
