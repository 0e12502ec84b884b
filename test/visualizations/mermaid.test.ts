import { describe, expect, it } from 'vitest';
import { setup, type AnyStateNode } from 'xstate';
import { taskMachine, type TaskMachineEvent } from '../../machines/chat/task.js';
import { toMermaid } from '../../visualizations/mermaid.js';

// Spelled out because `machine.events` leaves out inert events; `satisfies` keeps the list exhaustive.
const TASK_EVENTS = {
  'reply.progress': true,
  'reply.terminal': true,
} satisfies Record<TaskMachineEvent['type'], true>;

describe('toMermaid', () => {
  it('draws initial arrows, guards, self-loops, an eventless transition, a root transition and a nested compound state with a final state', () => {
    const tiny = setup({ guards: { ready: () => true } }).createMachine({
      id: 'tiny',
      initial: 'idle',
      on: { reset: '.idle' },
      states: {
        idle: { on: { start: { guard: 'ready', target: 'running' }, poke: {} } },
        running: {
          initial: 'working',
          states: {
            working: { on: { finish: 'done', tick: 'working' }, always: { guard: 'ready', target: 'done' } },
            done: { type: 'final' },
          },
        },
      },
    });
    expect(toMermaid(tiny)).toBe(
      [
        'stateDiagram-v2',
        '  [*] --> idle',
        '  idle',
        '  state running {',
        '    [*] --> running_working',
        '    state "working" as running_working',
        '    state "done" as running_done',
        '    running_done --> [*]',
        '  }',
        '  idle --> running: start [ready]',
        '  idle --> idle: poke',
        '  running_working --> running_done: finish',
        '  running_working --> running_working: tick',
        '  running_working --> running_done: (always) [ready]',
        '  idle --> idle: reset',
        '  running --> idle: reset',
        '',
      ].join('\n'),
    );
  });

  it('draws every state and every event of the task machine', () => {
    const diagram = toMermaid(taskMachine);
    const states = (node: AnyStateNode): AnyStateNode[] => Object.values(node.states).flatMap((s) => [s, ...states(s)]);
    const keys = states(taskMachine.root).map((s) => s.key);
    expect(keys).toEqual(['pending', 'settled']);
    for (const key of keys) expect(diagram).toMatch(new RegExp(`^\\s*(${key}|state ${key} \\{|state "${key}" as \\w+)$`, 'm'));
    for (const event of Object.keys(TASK_EVENTS)) {
      expect(diagram).toMatch(new RegExp(`^\\s*\\w+ --> \\w+: ${event.replaceAll('.', '\\.')}$`, 'm'));
    }
  });
});
