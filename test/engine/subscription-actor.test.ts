/**
 * The subscription actor against a socket double. Loopback always reports a closed peer before a write
 * can fail, so the rule "a reader whose keep-alive write fails is dropped at once" is checked here, where
 * the socket can be made to be gone without having said so.
 */
import { describe, expect, it, vi } from 'vitest';
import { SubscriptionActor } from '../../engine/core/subscription-actor.js';
import { SimulatedClock } from '../support/clock.js';
import { FakeSocket } from '../support/socket.js';

describe('subscription actor', () => {
  it('drops a reader at once when its keep-alive write finds the socket gone', () => {
    const clock = new SimulatedClock();
    const socket = new FakeSocket();
    const closed = vi.fn();
    const actor = new SubscriptionActor(socket, clock, { keepaliveMs: 1_000, maxQueuedBytes: 1 << 20 }, closed);
    actor.open('');
    clock.increment(1_000);
    expect(socket.written).toEqual([': open\n\n', ': keep-alive\n\n']);
    expect(closed).not.toHaveBeenCalled();

    // The peer is gone but no close event has arrived yet.
    socket.closed = true;
    clock.increment(1_000);
    expect(socket.written).toHaveLength(2);
    expect(closed).toHaveBeenCalledTimes(1);
    expect(actor.state.value).toBe('closed');
    expect(actor.state.context.closeReason).toBe('client_gone');
    // No timer is left behind to write again.
    expect(clock.pending).toBe(0);
  });

  it('reports a full socket, queues behind it, and writes the queue in one write on drain', () => {
    const socket = new FakeSocket();
    const actor = new SubscriptionActor(socket, new SimulatedClock(), { keepaliveMs: 60_000, maxQueuedBytes: 1 << 20 }, () => {});
    actor.open('');
    socket.full = true;
    actor.push([{ kind: 'terminal', subject: 'a', text: 'A', bytes: 1 }]);
    expect(actor.state.value).toEqual({ live: 'blocked' });
    actor.push([{ kind: 'terminal', subject: 'b', text: 'B', bytes: 1 }]);
    actor.push([{ kind: 'terminal', subject: 'c', text: 'C', bytes: 1 }]);
    expect(socket.written).toEqual([': open\n\n', 'A']);
    socket.full = false;
    socket.drained();
    expect(socket.written).toEqual([': open\n\n', 'A', 'BC']);
    expect(actor.state.value).toEqual({ live: 'flowing' });
    actor.close('host_closing');
  });
});
