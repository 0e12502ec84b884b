/** Text of the Form A stream's frames (4.2, 6.2). Data is always one compact JSON line. */
export const OPEN_COMMENT = ': open\n\n';
export const KEEPALIVE_COMMENT = ': keep-alive\n\n';

/** A terminal reply: carries its event id; enters the backlog. */
export function terminalFrame(id: string, data: string): string {
  return `id: ${id}\ndata: ${data}\n\n`;
}

/** Progress: live-only, no id, so it never moves the client's cursor. */
export function progressFrame(data: string): string {
  return `data: ${data}\n\n`;
}

/** The reconciliation frame, named so clients can tell it from replies; no id. */
export function resyncFrame(data: string): string {
  return `event: resync\ndata: ${data}\n\n`;
}
