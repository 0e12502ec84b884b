/**
 * The generated statechart files: for every machine in machines/, docs/statecharts/<name>.md (its
 * Mermaid diagram) and <name>.svg (its picture laid out by ELK); and README.md, which shows every picture.
 */
import type { AnyStateMachine } from 'xstate';
import { conversationMachine } from '../machines/chat/conversation.js';
import { deliveryMachine } from '../machines/chat/delivery.js';
import { integrationMachine } from '../machines/reasoning/integration.js';
import { jobMachine } from '../machines/reasoning/job.js';
import { pairingMachine } from '../machines/reasoning/pairing.js';
import { pluginJobMachine } from '../machines/reasoning/plugin-job.js';
import { clientSubscriptionMachine } from '../machines/client/client-subscription.js';
import { clientTaskMachine } from '../machines/client/client-task.js';
import { taskSessionMachine } from '../machines/chat/task-session.js';
import { subscriptionMachine } from '../machines/core/subscription.js';
import { taskMachine } from '../machines/chat/task.js';
import { toMermaid } from './mermaid.js';
import { toSvg } from './svg.js';

export interface Statechart {
  /** Its file names in docs/statecharts/. */
  readonly name: string;
  /** Its machine's module, from the package root. */
  readonly source: string;
  readonly title: string;
  /** What it is, in one line. */
  readonly summary: string;
  readonly machine: AnyStateMachine;
}

export interface StatechartFile {
  /** The file's name in docs/statecharts/. */
  readonly file: string;
  readonly text: string;
}

export const STATECHARTS: readonly Statechart[] = [
  {
    name: 'task',
    source: 'machines/chat/task.ts',
    title: 'Task',
    summary: 'one Form A task, pending until its first terminal reply',
    machine: taskMachine,
  },
  {
    name: 'session',
    source: 'machines/chat/task-session.ts',
    title: 'Session',
    summary: 'one Form A session, open until the host, the agent or idleness ends it',
    machine: taskSessionMachine,
  },
  {
    name: 'subscription',
    source: 'machines/core/subscription.ts',
    title: 'Subscription',
    summary: 'one `GET /v1/events` connection: the replay, then live frames, queued while the socket is full',
    machine: subscriptionMachine,
  },
  {
    name: 'conversation',
    source: 'machines/chat/conversation.ts',
    title: 'Conversation (Form B)',
    summary: 'one Form B conversation: append-only, no task states',
    machine: conversationMachine,
  },
  {
    name: 'delivery',
    source: 'machines/chat/delivery.ts',
    title: 'Callback delivery',
    summary: "one reply on its way to a client's callback: attempts, retries, and how it ends",
    machine: deliveryMachine,
  },
  {
    name: 'job',
    source: 'machines/reasoning/job.ts',
    title: 'Reasoning job',
    summary: 'one reasoning job, open (created, delivered, running) until a result, a failure, its deadline or its client ends it',
    machine: jobMachine,
  },
  {
    name: 'integration',
    source: 'machines/reasoning/integration.ts',
    title: 'Integration (backend)',
    summary: 'one paired assistant, active (its plugin unseen, online or offline) until revoked',
    machine: integrationMachine,
  },
  {
    name: 'pairing',
    source: 'machines/reasoning/pairing.ts',
    title: 'Pairing (backend)',
    summary: "one pairing: each side's messages in the one order commit-then-reveal allows",
    machine: pairingMachine,
  },
  {
    name: 'plugin-job',
    source: 'machines/reasoning/plugin-job.ts',
    title: "Reasoning job (the plugin's)",
    summary: 'one job in the assistant plugin: received, run (started) or refused, its outcome finished and posted until closed',
    machine: pluginJobMachine,
  },
  {
    name: 'client-task',
    source: 'machines/client/client-task.ts',
    title: "Task (the client's view)",
    summary: 'a task as the client sees it: sent, accepted, pending until its one terminal reply',
    machine: clientTaskMachine,
  },
  {
    name: 'client-subscription',
    source: 'machines/client/client-subscription.ts',
    title: "Subscription (the client's)",
    summary: "a session's one stream as the client holds it: opened, dropped, opened again after a wait",
    machine: clientSubscriptionMachine,
  },
];

/** The picture of the machine called `name` (one of STATECHARTS). */
export async function statechartSvg(name: string): Promise<string> {
  const statechart = STATECHARTS.find((candidate) => candidate.name === name);
  if (statechart === undefined) throw new Error(`no statechart is called ${name}`);
  return svgOf(statechart);
}

/** Every file of docs/statecharts/: each machine's page, then its picture. */
export async function statechartPages(): Promise<StatechartFile[]> {
  const files = await Promise.all(
    STATECHARTS.map(async (statechart) => [
      { file: `${statechart.name}.md`, text: pageOf(statechart) },
      { file: `${statechart.name}.svg`, text: await svgOf(statechart) },
    ]),
  );
  return [...files.flat(), { file: 'README.md', text: indexPage() }];
}

function svgOf({ title, machine }: Statechart): Promise<string> {
  return toSvg(machine, `${title} statechart`);
}

function pageOf({ name, source, title, machine }: Statechart): string {
  return [
    `# ${title} statechart`,
    '',
    `![${title}](${name}.svg)`,
    '',
    `Generated by \`npm run diagrams\` from [${source}](../../${source}); do not edit by hand.`,
    '',
    '```mermaid',
    toMermaid(machine) + '```',
    '',
  ].join('\n');
}

/** docs/statecharts/README.md: every machine's picture, each with what it is. */
function indexPage(): string {
  const pictures = STATECHARTS.flatMap(({ name, source, title, summary }) => [
    `**${title}** ([${source}](../../${source}), [Mermaid](${name}.md)): ${summary}.`,
    '',
    `![${title}](${name}.svg)`,
    '',
  ]);
  const intro = [
    '# Statecharts',
    '',
    'Every machine as a picture, drawn from the machine object itself and laid out by ELK (`visualizations/svg.ts`).',
    'Generated by `npm run diagrams`; do not edit by hand.',
  ];
  return [...intro, '', ...pictures].join('\n');
}
