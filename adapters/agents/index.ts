/** The built-in agents, by the name `serve --agent` and `createAssistantHost({ agent })` take. */
import type { Agent } from '../../engine/chat/agent.js';
import { approvalsAgent } from './approvals.js';
import { echoAgent } from './echo.js';
import { scriptAgent } from './script.js';

export { approvalsAgent, echoAgent, scriptAgent };
export { insightsAgent } from './insights.js';

/** The agents the CLI can serve by name. */
export const BUILTIN_AGENTS = { echo: echoAgent, script: scriptAgent, approvals: approvalsAgent } as const satisfies Record<string, Agent>;
export type BuiltinAgentName = keyof typeof BUILTIN_AGENTS;
