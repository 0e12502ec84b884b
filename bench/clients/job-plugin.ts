/**
 * The job baselines' plugin side (issue 26): a minimal plugin in the bench process, on the wire of
 * PROTOCOL.md 6d.1 spoken by hand. It holds the integration's stream, and for each job frame posts
 * `running`, then, once answered, a fixed `live_analysis` result. No log and no reasoner: the baselines
 * compare the server's cost, so this plugin's own cost (in the bench process) is not measured.
 */
import * as http from 'node:http';

const RESULT = JSON.stringify({ result: { insights: [{ text: 'What is the budget?', kind: 'question', confidence: 0.5 }] } });
const agent = new http.Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });

function post(url: URL, path: string, authorization: string, body?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { authorization };
    if (body !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    const request = http.request({ agent, host: url.hostname, port: url.port, method: 'POST', path, headers }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    request.on('error', reject);
    request.end(body);
  });
}

/** Holds `base`'s (`…/integrations/{id}`) stream with the relay token; resolves once it is open, with how to close it. */
export function minimalPlugin(base: string, relayToken: string, onError: (error: Error) => void): Promise<() => void> {
  const url = new URL(base);
  const authorization = `Bearer ${relayToken}`;
  const run = async (jobId: string) => {
    const running = await post(url, `${url.pathname}/jobs/${jobId}/running`, authorization);
    if (running !== 200) throw new Error(`running ${jobId} answered ${running}`);
    const result = await post(url, `${url.pathname}/jobs/${jobId}/result`, authorization, RESULT);
    if (result !== 200) throw new Error(`the result of ${jobId} answered ${result}`);
  };
  return new Promise((resolve, reject) => {
    const request = http.get(
      { host: url.hostname, port: url.port, path: `${url.pathname}/stream`, headers: { authorization }, agent: false },
      (response) => {
        if (response.statusCode !== 200) return reject(new Error(`the stream answered ${response.statusCode}`));
        response.setEncoding('utf8');
        let buffer = '';
        response.on('data', (chunk: string) => {
          buffer += chunk;
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            if (block === ': open') resolve(() => request.destroy());
            const data = block.indexOf('data: ');
            if (block.startsWith('id: ') && data > 0) run((JSON.parse(block.slice(data + 6)) as { job_id: string }).job_id).catch(onError);
          }
        });
      },
    );
    request.on('error', reject);
  });
}
