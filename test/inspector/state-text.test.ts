/** How replay and the inspector word a state: the status only when the state does not already say it. */
import { expect, it } from 'vitest';
import { stateText } from '../../engine/replay/timeline.js';

it('says a finished job is completed once, and a task its reply status and cause', () => {
  expect(stateText({ state: 'completed', status: 'completed' })).toBe('completed');
  expect(stateText({ state: 'open.running', status: 'running' })).toBe('open.running');
  expect(stateText({ state: 'settled', status: 'message' })).toBe('settled (message)');
  expect(stateText({ state: 'settled', status: 'errored', cause: 'interrupted' })).toBe('settled (errored, interrupted)');
});
