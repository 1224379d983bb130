import { describe, expect, it } from 'vitest';
import { noticeText } from '../../src/webview/literal';

// VS Code's own pattern for links in a notification's message, as the workbench of VS Code
// 1.139 has it (code-server's lib/vscode/out/vs/code/browser/workbench/workbench.js).
const NOTIFICATION_LINK = /\[([^\]]+)\]\(((?:https?:\/\/|command:|file:)[^)\s]+)(?: (["'])(.+?)(\3))?\)/gi;

describe('text shown in a notification', () => {
  it.each([
    '[Continue](command:workbench.action.terminal.sendSequence?%7B%22text%22%3A%22rm%22%7D) is not in the workspace folder.',
    'compaction cancelled: hook: see [the docs](https://example.com/x)',
    'There is no [a](file:///etc/passwd) in the workspace (any more).',
  ])('offers no link: %s', (text) => {
    const shown = noticeText(text);
    expect(shown.match(NOTIFICATION_LINK)).toBeNull();
    expect(shown.replace(/\u2060/g, '')).toBe(text); // nothing else changed
  });

  it('shows a word joiner already in the text as an escape, so it cannot hide anything', () => {
    expect(noticeText('a\u2060b')).toBe('a\\u2060b');
  });

  it('leaves ordinary text alone', () => {
    expect(noticeText('src/app.py is not in the workspace folder.')).toBe('src/app.py is not in the workspace folder.');
  });
});
