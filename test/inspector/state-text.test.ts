/** How the inspector page words a state: the status only when the state does not already say it, as replay prints it. */
import { expect, it } from 'vitest';
import { INSPECTOR_PAGE } from '../../adapters/inspector/page.js';

/** The page's own `stateOf`, taken from the script it serves. */
const source = INSPECTOR_PAGE.slice(INSPECTOR_PAGE.indexOf('function stateOf'), INSPECTOR_PAGE.indexOf('function timeOf'));
const stateOf = new Function(`${source}; return stateOf;`)() as (entry: { state: string; status?: string; cause?: string }) => string;

it('says a finished job is completed once, and a task its reply status and cause', () => {
  expect(stateOf({ state: 'completed', status: 'completed' })).toBe('completed');
  expect(stateOf({ state: 'open.running', status: 'running' })).toBe('open.running');
  expect(stateOf({ state: 'settled', status: 'message' })).toBe('settled (message)');
  expect(stateOf({ state: 'settled', status: 'errored', cause: 'interrupted' })).toBe('settled (errored, interrupted)');
});
