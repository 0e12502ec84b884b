import { describe, expect, it } from 'vitest';
import { assign, initialTransition, setup, transition } from 'xstate';
import { stepper } from '../../machines/core/step.js';
import { subscriptionMachine, type SubscriptionEvent } from '../../machines/core/subscription.js';

/** A counter whose action implementation records every execution, so a test can see it never ran. */
function counterMachine(executed: string[]) {
  return setup({
    types: {
      context: {} as { n: number },
      input: {} as { n: number },
      events: {} as { type: 'inc'; by: number } | { type: 'stop' },
    },
    actions: {
      report: (_, params: { n: number }) => {
        executed.push(`report ${params.n}`);
      },
    },
  }).createMachine({
    context: ({ input }) => ({ n: input?.n ?? 0 }),
    initial: 'counting',
    states: {
      counting: {
        on: {
          inc: {
            actions: [
              assign({ n: ({ context, event }) => context.n + event.by }),
              { type: 'report', params: ({ context }) => ({ n: context.n }) },
            ],
          },
          stop: 'stopped',
        },
      },
      stopped: { type: 'final' },
    },
  });
}

const bare = (actions: readonly { type: string; params?: unknown }[]) => actions.map(({ type, params }) => ({ type, params }));

describe('stepper', () => {
  it('initial() builds the snapshot from input and collects no actions', () => {
    const executed: string[] = [];
    const [snapshot, actions] = stepper(counterMachine(executed)).initial({ n: 5 });
    expect([snapshot.value, snapshot.context, actions]).toEqual(['counting', { n: 5 }, []]);
  });

  it('next() collects actions with their params and never executes them', () => {
    const executed: string[] = [];
    const s = stepper(counterMachine(executed));
    const [first, a1] = s.next(s.initial({ n: 5 })[0], { type: 'inc', by: 2 });
    const [second, a2] = s.next(first, { type: 'inc', by: 3 });
    expect([first.context, second.context]).toEqual([{ n: 7 }, { n: 10 }]);
    expect(bare(a1)).toEqual([{ type: 'report', params: { n: 7 } }]);
    expect(bare(a2)).toEqual([{ type: 'report', params: { n: 10 } }]);
    expect(executed).toEqual([]);
  });

  it('is pure: stepping the same snapshot twice gives equal results and leaves it unchanged', () => {
    const s = stepper(counterMachine([]));
    const [start] = s.initial({ n: 1 });
    const [x] = s.next(start, { type: 'inc', by: 4 });
    const [y] = s.next(start, { type: 'inc', by: 4 });
    expect([x.context, y.context, start.context]).toEqual([{ n: 5 }, { n: 5 }, { n: 1 }]);
  });

  it('reaches final states like the machine does', () => {
    const s = stepper(counterMachine([]));
    const [done, actions] = s.next(s.initial({ n: 0 })[0], { type: 'stop' });
    expect([done.value, done.status, actions]).toEqual(['stopped', 'done', []]);
  });

  it("agrees with xstate's transition() on the subscription machine", () => {
    const events: SubscriptionEvent[] = [
      { type: 'open', replay: 'id: e:g:1\ndata: {}\n\n', at: 1 },
      { type: 'blocked', buffered: 10, at: 2 },
      { type: 'frames', frames: [{ kind: 'progress', subject: 'a', text: 'P', bytes: 1 }], at: 3 },
      { type: 'frames', frames: [{ kind: 'terminal', subject: 'a', text: 'T', bytes: 1 }], at: 4 },
      { type: 'drained', at: 5 },
      { type: 'tick', at: 30_000 },
      { type: 'close', reason: 'host_closing', at: 30_001 },
    ];
    const input = { keepaliveMs: 20_000, maxQueuedBytes: 100, at: 0 };
    const s = stepper(subscriptionMachine);
    let [ours, ourActions] = s.initial(input);
    let [theirs, theirActions] = initialTransition(subscriptionMachine, input);
    const trace = (value: unknown, context: unknown, actions: readonly { type: string; params?: unknown }[]) => ({
      value,
      context,
      actions: bare(actions),
    });
    expect(trace(ours.value, ours.context, ourActions)).toEqual(trace(theirs.value, theirs.context, theirActions));
    for (const event of events) {
      [ours, ourActions] = s.next(ours, event);
      [theirs, theirActions] = transition(subscriptionMachine, theirs, event);
      expect(trace(ours.value, ours.context, ourActions)).toEqual(trace(theirs.value, theirs.context, theirActions));
    }
    expect(ours.value).toBe('closed');
  });
});
