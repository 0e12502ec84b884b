/**
 * Each machine's header comment carries its state table (State | Event | Next | …), written to read like
 * the protocol's Part 3 tables. This test holds those tables to the machines, both ways: every row is a
 * transition the machine has, and every transition the machine has is a row. `any` is a transition of the
 * whole machine, `x.*` one of the compound state `x`, `(always)` an eventless transition; a row whose Next
 * is its State is a self-loop.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { AnyStateMachine, AnyStateNode } from 'xstate';
import { conversationMachine } from '../../machines/chat/conversation.js';
import { deliveryMachine } from '../../machines/chat/delivery.js';
import { integrationMachine } from '../../machines/reasoning/integration.js';
import { jobMachine } from '../../machines/reasoning/job.js';
import { pairingMachine } from '../../machines/reasoning/pairing.js';
import { pluginJobMachine } from '../../machines/reasoning/plugin-job.js';
import { clientSubscriptionMachine } from '../../machines/client/client-subscription.js';
import { clientTaskMachine } from '../../machines/client/client-task.js';
import { taskSessionMachine } from '../../machines/chat/task-session.js';
import { subscriptionMachine } from '../../machines/core/subscription.js';
import { taskMachine } from '../../machines/chat/task.js';

const MACHINES: ReadonlyArray<[string, AnyStateMachine]> = [
  ['task-session', taskSessionMachine],
  ['conversation', conversationMachine],
  ['task', taskMachine],
  ['delivery', deliveryMachine],
  ['subscription', subscriptionMachine],
  ['job', jobMachine],
  ['integration', integrationMachine],
  ['pairing', pairingMachine],
  ['plugin-job', pluginJobMachine],
  ['client-task', clientTaskMachine],
  ['client-subscription', clientSubscriptionMachine],
];

/** `State | Event | Next` of the first table in the file's header comment. */
function tableRows(name: string): string[] {
  const machines = fileURLToPath(new URL('../../machines/', import.meta.url));
  const file = readdirSync(machines, { recursive: true, encoding: 'utf8' }).find((path) => path.endsWith(`/${name}.ts`))!;
  const text = readFileSync(machines + file, 'utf8');
  const header = text.slice(0, text.indexOf('*/'));
  const rows = header
    .split('\n')
    .map((line) => line.replace(/^\s*\*\s?/, ''))
    .filter((line) => line.startsWith('|'))
    .map((line) =>
      line
        .split('|')
        .slice(1, 4)
        .map((cell) => cell.trim()),
    );
  // The header row and the |---| separator.
  return rows.slice(2).map(([state, event, next]) => `${state} --${event}--> ${next}`);
}

const nameOf = (node: AnyStateNode): string =>
  node.path.length === 0 ? 'any' : node.path.join('.') + (node.type === 'compound' ? '.*' : '');

/** Every transition of the machine as `source --event--> target`. */
function transitions(machine: AnyStateMachine): string[] {
  const found: string[] = [];
  const visit = (node: AnyStateNode): void => {
    const definitions = [...[...node.transitions.values()].flat(), ...(node.always ?? [])];
    for (const t of definitions) {
      const event = t.eventType === '' ? '(always)' : t.eventType;
      for (const target of t.target ?? [node]) found.push(`${nameOf(node)} --${event}--> ${target.path.join('.')}`);
    }
    for (const child of Object.values(node.states)) visit(child);
  };
  visit(machine.root);
  return found;
}

describe('state tables in the machines say what the machines do', () => {
  it.each(MACHINES)('%s', (name, machine) => {
    const rows = new Set(tableRows(name));
    expect(rows.size).toBeGreaterThan(0);
    // A self-loop is written with its own state as Next; a wildcard row's self-loop names the wildcard.
    const actual = new Set(transitions(machine).map((t) => t.replace(/^(\S+) (--.*--> )\1$/, '$1 $2$1')));
    expect([...rows].sort()).toEqual([...actual].sort());
  });
});
