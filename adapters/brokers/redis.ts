/**
 * The channel on Redis Streams: a stream key per integration, `{namespace}:assistant_channel:{integration}`,
 * each entry a notice. A node reads the keys of the integrations it has subscribers of, and no other,
 * with one blocking XREAD over all of them on a connection of its own, each key from the last entry it
 * read of it; a key subscribed anew is read from its end as it was when subscribed (asked on the
 * publishing connection, so a notice this node publishes after subscribing is heard). A new key wakes the
 * blocked read through a wake key of the node's own, which the read always includes, so the read is
 * issued again over the new set at once; a key left is dropped at the next read.
 *
 * What bounds Redis: each XADD trims its key to about 100 entries (MAXLEN ~) and sets it to expire a
 * minute after its last notice (PEXPIRE), so the keys are the integrations with a notice in the last
 * minute, plus one wake key a node, which expires as well. A reconnect keeps each key's last id: a Redis
 * that restarted empty makes new ids after the old ones, so nothing published since is missed; what a
 * node missed while it was away is covered by its next look.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { BrokerPubSub, delay, type BrokerHealth, type BrokerOptions } from './broker.js';

const KEPT_ENTRIES = 100;
const KEEP_MS = 60_000;
const BLOCK_MS = 5_000;

/** An integration read from the broker: its key, and the id of the last entry read of it (undefined: not known yet). */
interface Reading {
  readonly key: string;
  /** The id of the key's end when subscribed, asked on the publishing connection. */
  readonly start: Promise<string | undefined>;
  last: string | undefined;
}

export class RedisPubSub extends BrokerPubSub {
  private readonly publisher: Redis;
  private readonly reader: Redis;
  private readonly readings = new Map<string, Reading>();
  /** The node's own key, read with the others, written to wake the blocked read when a key is added. */
  private readonly wakeKey: string;
  private wakeLast = '0-0';
  private wakeSent = false;
  private reading: Promise<void> = Promise.resolve();

  private constructor(url: string, options: BrokerOptions) {
    super(options);
    this.wakeKey = `${this.namespace}:assistant_channel_wake:${randomUUID()}`;
    const common = { lazyConnect: true, retryStrategy: () => 500, connectionName: 'assistant-relay' };
    // A publish while Redis is away fails at once (reported), rather than queueing without bound.
    this.publisher = new Redis(url, { ...common, enableOfflineQueue: false, maxRetriesPerRequest: 1 });
    this.reader = new Redis(url, { ...common, maxRetriesPerRequest: null });
    for (const connection of [this.publisher, this.reader])
      connection.on('error', (error: unknown) => this.failed(error, 'the Redis connection'));
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
    await this.publisher.del(this.wakeKey).catch(() => {});
    await this.publisher.quit().catch(() => this.publisher.disconnect());
  }

  /** Removes every key of the namespace's channel. */
  async remove(): Promise<void> {
    for await (const keys of this.publisher.scanStream({ match: `${this.namespace}:assistant_channel*`, count: 1000 }))
      if ((keys as string[]).length > 0) await this.publisher.del(...(keys as string[]));
  }

  protected async send(integrationId: string, text: string): Promise<void> {
    await this.append(this.keyOf(integrationId), text);
  }

  protected listen(integrationId: string): void {
    const key = this.keyOf(integrationId);
    const start = this.publisher.xrevrange(key, '+', '-', 'COUNT', 1).then(
      (newest) => newest[0]?.[0] ?? '0-0',
      () => undefined,
    );
    this.readings.set(integrationId, { key, start, last: undefined });
    this.wake();
  }

  protected unlisten(integrationId: string): void {
    this.readings.delete(integrationId);
  }

  private keyOf(integrationId: string): string {
    return `${this.namespace}:assistant_channel:${integrationId}`;
  }

  private async append(key: string, text: string): Promise<void> {
    await this.publisher.multi().xadd(key, 'MAXLEN', '~', KEPT_ENTRIES, '*', 'notice', text).pexpire(key, KEEP_MS).exec();
  }

  /** Makes the blocked read return, once until it is issued again. */
  private wake(): void {
    if (this.wakeSent || this.closed) return;
    this.wakeSent = true;
    this.append(this.wakeKey, '').catch((error: unknown) => this.failed(error, 'waking the channel read'));
  }

  private async read(): Promise<void> {
    while (!this.closed) {
      try {
        // A key subscribed from here on wakes the read that is about to be issued.
        this.wakeSent = false;
        const readings = await this.starts();
        const keys = [this.wakeKey, ...[...readings.values()].map((reading) => reading.key)];
        const ids = [this.wakeLast, ...[...readings.values()].map((reading) => reading.last!)];
        const answer = await this.reader.xread('COUNT', 1000, 'BLOCK', BLOCK_MS, 'STREAMS', ...keys, ...ids);
        this.recovered();
        for (const [key, entries] of answer ?? []) {
          if (key === this.wakeKey) this.wakeLast = entries.at(-1)?.[0] ?? this.wakeLast;
          else this.deliver(readings, key, entries);
        }
      } catch (error) {
        if (this.closed) return;
        this.failed(error, 'reading the channel');
        await delay(500);
      }
    }
  }

  /** The integrations to read, each from a known id: its end when subscribed, or its end now when that could not be asked. */
  private async starts(): Promise<Map<string, Reading>> {
    const readings = new Map(this.readings);
    for (const reading of readings.values()) {
      reading.last ??= (await reading.start) ?? (await this.reader.xrevrange(reading.key, '+', '-', 'COUNT', 1))[0]?.[0] ?? '0-0';
    }
    return readings;
  }

  /** Entries of a key read, for its subscribers: not if they left (or left and came back: then it is read again from its new start). */
  private deliver(readings: Map<string, Reading>, key: string, entries: Array<[id: string, fields: string[]]>): void {
    const integrationId = key.slice(key.lastIndexOf(':') + 1);
    const reading = readings.get(integrationId);
    for (const [id, fields] of entries) {
      if (reading === undefined || this.readings.get(integrationId) !== reading) return;
      reading.last = id;
      const at = fields.indexOf('notice');
      if (at !== -1 && at + 1 < fields.length) this.received(integrationId, fields[at + 1]!);
    }
  }
}
