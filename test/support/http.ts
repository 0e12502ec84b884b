/** Plain HTTP helpers for tests: JSON requests to a host on loopback, from 127.0.0.1 or another loopback address (another source). */
import { Agent, fetch as fetchVia } from 'undici';

export interface JsonResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly body: unknown;
  readonly text: string;
}

export async function request(
  url: string,
  init: { method?: string; token?: string; body?: unknown; rawBody?: string; headers?: Record<string, string>; from?: string } = {},
): Promise<JsonResponse> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`;
  let body: string | undefined = init.rawBody;
  if (init.body !== undefined) {
    body = JSON.stringify(init.body);
    headers['content-type'] ??= 'application/json';
  }
  const sent = { method: init.method ?? (body === undefined ? 'GET' : 'POST'), headers, ...(body !== undefined ? { body } : {}) };
  const response =
    init.from === undefined
      ? await fetch(url, sent)
      : ((await fetchVia(url, { ...sent, dispatcher: agentFrom(init.from) })) as unknown as Response);
  const text = await response.text();
  let parsed: unknown = undefined;
  try {
    parsed = text.length > 0 ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: response.status, headers: response.headers, body: parsed, text };
}

const agents = new Map<string, Agent>();

/** Connections that leave from `address` (127.0.0.2, …: the same machine, another source to the server). */
export function agentFrom(address: string): Agent {
  let agent = agents.get(address);
  if (agent === undefined) agents.set(address, (agent = new Agent({ localAddress: address })));
  return agent;
}

export function post(base: string, token: string, body: unknown): Promise<JsonResponse> {
  return request(`${base}/v1/incoming`, { token, body });
}

/** A script for the `script` agent, as the text of a turn. */
export function script(...steps: unknown[]): string {
  return JSON.stringify({ script: steps });
}
