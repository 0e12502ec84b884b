/**
 * The channel on NATS JetStream. One stream holds the namespace's notices (`{namespace}.assistant_channel.
 * {integration}`) for a minute, on the server's disk, so that it outlives a restart of the server; each
 * node reads it with an ordered consumer, which the client recreates at the right sequence after a
 * reconnect, so an outage of a node's connection or of the server loses no notice kept meanwhile.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import {
  DeliverPolicy,
  DiscardPolicy,
  StorageType,
  jetstream,
  jetstreamManager,
  type ConsumerMessages,
  type JetStreamClient,
  type StreamAPI,
  type StreamConfig,
} from '@nats-io/jetstream';
import { BrokerPubSub, delay, type BrokerHealth, type BrokerOptions } from './broker.js';

/** How long the stream keeps a notice: long enough for a consumer to come back after a blip. */
const KEEP_NS = 60_000 * 1_000_000;

export class NatsPubSub extends BrokerPubSub {
  private readonly stream: string;
  private reading: Promise<void> = Promise.resolve();
  private stopReading = (): void => {};
  /** Between the connection's `disconnect` and its `reconnect`. */
  private disconnected = false;

  private constructor(
    private readonly connection: NatsConnection,
    private readonly js: JetStreamClient,
    options: BrokerOptions,
  ) {
    super(options);
    this.stream = `${this.namespace}_assistant_channel`;
  }

  static async connect(options: BrokerOptions): Promise<NatsPubSub> {
    const url = new URL(options.url);
    const connection = await connect({
      servers: `${url.hostname}:${url.port || 4222}`,
      name: 'assistant-relay',
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      ...(url.username === '' ? {} : { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) }),
    });
    const broker = new NatsPubSub(connection, jetstream(connection), options);
    let first: ConsumerMessages;
    try {
      await broker.ensureStream();
      // Reading from before `connect` resolves: a notice published after it is heard.
      first = await broker.consume();
    } catch (error) {
      await connection.close();
      throw error;
    }
    broker.reading = broker.read(first);
    return broker;
  }

  get health(): BrokerHealth {
    return { kind: 'nats', connected: !this.connection.isClosed() && this.connection.info !== undefined && !this.disconnected };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopReading();
    await this.reading;
    await this.connection.close();
  }

  async remove(): Promise<void> {
    const manager = await jetstreamManager(this.connection);
    await manager.streams.delete(this.stream).catch(() => false);
  }

  protected async send(topic: string, text: string): Promise<void> {
    await this.js.publish(this.subjectOf(topic), text);
  }

  private subjectOf(topic: string): string {
    return `${this.namespace}.${topic.replace(':', '.')}`;
  }

  private topicOf(subject: string): string {
    return subject.slice(this.namespace.length + 1).replace('.', ':');
  }

  private async ensureStream(): Promise<void> {
    const manager = await jetstreamManager(this.connection);
    await ensureStream(manager.streams, {
      name: this.stream,
      subjects: [`${this.namespace}.assistant_channel.>`],
      storage: StorageType.File,
      max_age: KEEP_NS,
      discard: DiscardPolicy.Old,
    });
  }

  /** An ordered consumer of the stream from its end. */
  private async consume(): Promise<ConsumerMessages> {
    const consumer = await this.js.consumers.get(this.stream, { deliver_policy: DeliverPolicy.New });
    const messages = await consumer.consume();
    this.stopReading = () => void messages.close();
    return messages;
  }

  /** Reads the stream for as long as the broker lives; after a failure, makes sure the stream is there and reads on from its end. */
  private async read(first: ConsumerMessages): Promise<void> {
    void this.watchStatus();
    for (let messages: ConsumerMessages | undefined = first; !this.closed; messages = undefined) {
      try {
        messages ??= await this.consume();
        if (this.closed) await messages.close();
        for await (const message of messages) this.received(this.topicOf(message.subject), message.string());
      } catch (error) {
        this.failed(error, 'reading the channel');
      }
      if (this.closed) return;
      await delay(500);
      await this.ensureStream().catch((error: unknown) => this.failed(error, 'creating the channel stream'));
    }
  }

  private async watchStatus(): Promise<void> {
    for await (const status of this.connection.status()) {
      if (status.type === 'disconnect') this.disconnected = true;
      else if (status.type === 'reconnect') this.disconnected = false;
    }
  }
}

/** Tries at making sure the stream is there, and the wait before the second (doubled before each next: 1.5 s of waits in all). */
const ENSURE_TRIES = 5;
const ENSURE_FIRST_WAIT_MS = 100;

/**
 * The stream as configured: updated if it is there, else created. A NATS server whose other streams are
 * being deleted fails a create now and then (`error creating store for stream`, 10077: a storage folder
 * removed under it), so a failure is tried again after 0.1, 0.2, 0.4 and 0.8 s before it is thrown.
 */
export async function ensureStream(
  streams: Pick<StreamAPI, 'info' | 'update' | 'add'>,
  config: Pick<StreamConfig, 'name'> & Partial<StreamConfig>,
  wait: (ms: number) => Promise<unknown> = delay,
): Promise<void> {
  for (let tries = 1; ; tries += 1) {
    try {
      try {
        await streams.info(config.name);
        await streams.update(config.name, config);
      } catch {
        await streams.add(config);
      }
      return;
    } catch (error) {
      if (tries === ENSURE_TRIES) throw error;
      await wait(ENSURE_FIRST_WAIT_MS * 2 ** (tries - 1));
    }
  }
}
