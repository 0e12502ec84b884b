/**
 * The bundled call (samples/sales-call.txt) and the live insights the builtin reasoner gives it, line by line:
 * what `npm start` shows. Held by test/agents/insights.test.ts exactly, and by the demo's own test.
 */
import { readFileSync } from 'node:fs';

export const SALES_CALL = readFileSync(new URL('../../samples/sales-call.txt', import.meta.url), 'utf8')
  .split('\n')
  .filter(Boolean);

/** `line number: insight`, for the lines that get one. */
export const SALES_CALL_INSIGHTS = [
  '2: Daniel mentioned a figure: "We are rolling out the new field app to four regions, and support tickets are piling up."',
  '6: Daniel mentioned a figure: "Twelve agents, around three thousand tickets a week, more since the rollout started."',
  '8: Daniel mentioned a figure: "Priya runs support operations, and finance signs off on anything over fifty thousand."',
  '10: Daniel raised a concern: "There is some budget, but I am worried it will be cut if the rollout is delayed again."',
  '12: Daniel raised a concern: "The integration with our ticketing system took two months longer than planned."',
  '14: Maya\'s offer was accepted: "Our integration usually takes a week, and we can show you a customer on the same ticketing system."',
  '16: Daniel mentioned a figure: "Response times under four hours, and agents not burning out."',
  '18: Daniel mentioned a date: "The board review is at the end of next month."',
  '19: Maya mentioned a figure: "Then let\'s aim for a pilot with two agents before the review."',
  '20: Daniel stated a decision: "We agreed internally to pilot one tool this quarter, so that fits."',
  '21: Maya committed to a next step: "I will send you a pilot plan and a reference call by Friday."',
  '22: Daniel committed to a next step: "I will set up a meeting with Priya next week."',
  '24: Daniel named a risk: "Our security team has to approve any tool that reads customer tickets."',
  '26: Daniel stated a decision: "Let\'s go with a two-week pilot if security signs off."',
];
