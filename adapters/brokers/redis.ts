/**
 * The channel on Redis Streams. One stream key holds the namespace's notices (`{namespace}:assistant_
 * channel`, each entry its topic and notice), trimmed to about 10,000 entries; each node reads it with a
 * blocking XREAD from the last entry it saw, on a connection of its own, so a short outage of that
 * connection loses no notice still in the stream. A Redis that keeps nothing on disk loses the stream
 * when it restarts: a node then reads on from the new stream's end, and its next look covers the gap.
 */
import { Redis } from 'ioredis';
import { BrokerPubSub, delay, type BrokerHealth, type BrokerOptions } from './broker.js';

const KEPT_ENTRIES = 10_000;
const BLOCK_MS = 5_000;

export class RedisPubSub extends BrokerPubSub {
  private readonly key: string;
  private readonly publisher: Redis;
  private readonly reader: Redis;
  private reading: Promise<void> = Promise.resolve();
  /** The id of the last entry read; undefined: read on from the stream's end. */
  private last: string | undefined;

  private constructor(url: string, options: BrokerOptions) {
    super(options);
    this.key = `${this.namespace}:assistant_channel`;
    const common = { lazyConnect: true, retryStrategy: () => 500, connectionName: 'assistant-relay' };
    // A publish while Redis is away fails at once (reported), rather than queueing without bound.
    this.publisher = new Redis(url, { ...common, enableOfflineQueue: false, maxRetriesPerRequest: 1 });
    this.reader = new Redis(url, { ...common, maxRetriesPerRequest: null });
    for (const connection of [this.publisher, this.reader])
      connection.on('error', (error: unknown) => this.failed(error, 'the Redis connection'));
    // After a reconnect the stream may be a new one (a Redis that restarted empty): read on from its end.
    this.reader.on('ready', () => (this.last = undefined));
  }

  static async connect(options: BrokerOptions): Promise<RedisPubSub> {
    const broker = new RedisPubSub(options.url, options);
    try {
      await Promise.all([broker.publisher.connect(), broker.reader.connect()]);
    } catch (error) {
      broker.publisher.disconnect();
      broker.reader.disconnect();
      throw error;
    }
    broker.reading = broker.read();
    return broker;
  }

  get health(): BrokerHealth {
    return { kind: 'redis', connected: this.publisher.status === 'ready' && this.reader.status === 'ready' };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.reader.disconnect();
    await this.reading;
    await this.publisher.quit().catch(() => this.publisher.disconnect());
  }

  async remove(): Promise<void> {
    await this.publisher.del(this.key);
  }

  protected async send(topic: string, text: string): Promise<void> {
    await this.publisher.xadd(this.key, 'MAXLEN', '~', KEPT_ENTRIES, '*', 'topic', topic, 'notice', text);
  }

  private async read(): Promise<void> {
    while (!this.closed) {
      try {
        this.last ??= await this.end();
        const answer = await this.reader.xread('COUNT', 1000, 'BLOCK', BLOCK_MS, 'STREAMS', this.key, this.last);
        for (const [, entries] of answer ?? []) {
          for (const [id, fields] of entries) {
            this.last = id;
            const field = (name: string) => fields[fields.indexOf(name) + 1];
            const topic = field('topic');
            const notice = field('notice');
            if (topic !== undefined && notice !== undefined) this.received(topic, notice);
          }
        }
      } catch (error) {
        if (this.closed) return;
        this.failed(error, 'reading the channel');
        await delay(500);
      }
    }
  }

  /** The id of the stream's newest entry ('0-0' for an empty stream): reading goes on after it. */
  private async end(): Promise<string> {
    const newest = await this.reader.xrevrange(this.key, '+', '-', 'COUNT', 1);
    return newest[0]?.[0] ?? '0-0';
  }
}
