import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { post, script } from '../support/http.js';
import { TOKEN, startHost, type TestHost } from '../support/host.js';
import { SseConnection } from '../support/sse.js';

describe('one Form A turn over real HTTP', () => {
  let t: TestHost;
  beforeEach(async () => {
    t = await startHost();
  });
  afterEach(async () => {
    await t.cleanup();
  });

  it('streams `: open`, live progress without an id, then the terminal reply with an id', async () => {
    const stream = await SseConnection.open(`${t.url}/v1/events?session_id=s1`, { token: TOKEN });
    expect(stream.status).toBe(200);
    expect(stream.headers['content-type']).toMatch(/^text\/event-stream/);
    const accepted = await post(t.url, TOKEN, {
      session_id: 's1',
      task_id: 't1',
      text: script({ typing: 'working' }, { message: 'done' }),
    });
    expect(accepted.status).toBe(202);
    expect(accepted.body).toEqual({ ok: true, session_id: 's1', task_id: 't1' });
    await stream.untilReplies(1);
    expect(stream.messages[0]).toEqual({ kind: 'comment', comment: 'open' });
    const [progress, terminal] = stream.frames;
    expect(progress!.id).toBeUndefined();
    expect(JSON.parse(progress!.data)).toEqual({ session_id: 's1', task_id: 't1', status: 'typing', label: 'working' });
    expect(terminal!.id).toMatch(/^[0-9a-z]+:[0-9a-z]+:1$/);
    expect(terminal!.event).toBeUndefined();
    expect(JSON.parse(terminal!.data)).toMatchObject({ session_id: 's1', task_id: 't1', status: 'message', reply_text: 'done' });
    stream.close();
  });
});
