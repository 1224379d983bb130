import { describe, expect, it } from 'vitest';
import { createdStatusBarItems, ThemeColor } from '../support/vscode-stub';
import { ContextStatusBar } from '../../src/view/statusBar';
import { initialState, reduceAll, type ViewState } from '../../src/state/reducer';

function state(used: number): ViewState {
  return reduceAll(initialState(), [
    { type: 'serverStatus', status: 'running' },
    {
      type: 'sessionStarted',
      sessionId: 's',
      usage: { sessionId: 's', used, size: 1000, compactAt: 800, windowNumber: 1, lastTurn: { input: 0, cacheRead: 0, cacheWrite: 0, output: 0, cost: 0 }, lastCall: { input: 0, cacheRead: 0, cacheWrite: 0, output: 0, cost: 0 }, session: { input: 0, cacheRead: 0, cacheWrite: 0, output: 0, cost: 0 }, cacheHitRate: 0.5, cost: 0.01 },
    },
  ]);
}

describe('status-bar context meter', () => {
  it('shows the percent and colours high and critical usage; a click opens the view', () => {
    const bar = new ContextStatusBar('agentServer.showView');
    const item = createdStatusBarItems.at(-1)!;
    expect(item.command).toBe('agentServer.showView');
    expect(item.visible).toBe(true);
    bar.update(state(500));
    expect(item.text).toBe('$(dashboard) 50% ctx');
    expect(item.backgroundColor).toBeUndefined();
    expect(String(item.tooltip)).toContain('cache 50%');
    bar.update(state(860));
    expect((item.backgroundColor as ThemeColor | undefined)?.id).toBe('statusBarItem.warningBackground');
    bar.update(state(960));
    expect((item.backgroundColor as ThemeColor | undefined)?.id).toBe('statusBarItem.errorBackground');
  });

  it('refreshes the tooltip when only the last call\'s figures change', () => {
    const bar = new ContextStatusBar('agentServer.showView');
    const item = createdStatusBarItems.at(-1)!;
    const before = state(500);
    bar.update(before);
    expect(String(item.tooltip)).toContain('Last call: 0 input');
    const lastCall = { input: 1234, cacheRead: 0, cacheWrite: 0, output: 56, cost: 0 };
    bar.update({ ...before, usage: { ...before.usage!, lastCall } });
    expect(item.text).toBe('$(dashboard) 50% ctx'); // the same percent, cost and cache rate
    expect(String(item.tooltip)).toContain('Last call: 1,234 input, 0 cache read, 0 cache write, 56 output');
  });

  it('says when the server is down', () => {
    const bar = new ContextStatusBar('agentServer.showView');
    const item = createdStatusBarItems.at(-1)!;
    bar.update(reduceAll(initialState(), [{ type: 'serverStatus', status: 'failed', message: 'Install the server' }]));
    expect(item.text).toBe('$(error) Agent');
    expect(item.tooltip).toBe('Install the server');
  });

  it('shows a server message in the tooltip literally: control and bidirectional characters as escapes', () => {
    const bar = new ContextStatusBar('agentServer.showView');
    const item = createdStatusBarItems.at(-1)!;
    bar.update(reduceAll(initialState(), [{ type: 'serverStatus', status: 'failed', message: 'Cannot run /opt/\u202epy\u001b[2J' }]));
    expect(item.tooltip).toBe('Cannot run /opt/\\u202epy\\x1b[2J');
  });
});
