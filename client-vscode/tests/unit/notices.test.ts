import { describe, expect, it } from 'vitest';
import { showNotice } from '../../src/server/notices';
import { shownNotices } from '../support/vscode-stub';

describe("the server's messages", () => {
  it('are shown literally: a link a setting or a model wrote does not act', async () => {
    // Issue 44, item 5: a thinking level or a model name the server echoes back.
    const link = '[x](command:workbench.action.terminal.sendSequence?%7B%22text%22%3A%22rm%22%7D)';
    await showNotice(2, `thinking ${link} is not a level`);
    await showNotice(1, `unknown model ${link}`, [{ title: 'Open Settings' }]);
    await showNotice(3, 'plain \u001b[31mred');
    const [warning, error, info] = shownNotices.slice(-3);
    expect(warning?.kind).toBe('warning');
    expect(error?.kind).toBe('error');
    expect(error?.actions).toEqual(['Open Settings']);
    for (const shown of [warning, error]) {
      expect(shown?.text).not.toContain('](command:');
      expect(shown?.text).toContain('command:workbench.action.terminal.sendSequence');
    }
    expect(info?.text).toBe('plain \\x1b[31mred');
  });
});
