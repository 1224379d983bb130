import { describe, expect, it } from 'vitest';
import { insideFolder, mentionOf } from '../../src/editor/mention';

const lines = (startLine: number, endLine: number, endCharacter = 5) => ({ startLine, endLine, endCharacter, isEmpty: false });

describe('Agent: Add to Chat', () => {
  it('mentions the file, or the lines selected, as the server reads them', () => {
    expect(mentionOf('src/app.py')).toBe('@src/app.py');
    expect(mentionOf('src/app.py', { startLine: 4, endLine: 4, endCharacter: 0, isEmpty: true })).toBe('@src/app.py');
    expect(mentionOf('src/app.py', lines(9, 19))).toBe('@src/app.py#L10-20');
    expect(mentionOf('src/app.py', lines(9, 9))).toBe('@src/app.py#L10');
    // Whole lines selected end at the start of the next one: that line is not taken.
    expect(mentionOf('src/app.py', lines(9, 12, 0))).toBe('@src/app.py#L10-12');
    expect(mentionOf('docs/my notes.md', lines(2, 3))).toBe('@"docs/my notes.md#L3-4"');
    expect(mentionOf('odd"name.txt')).toBeUndefined();
  });

  it('takes only files inside the workspace folder', () => {
    expect(insideFolder('/w/proj', '/w/proj/src/app.py')).toBe('src/app.py');
    expect(insideFolder('/w/proj/', '/w/proj/a.txt')).toBe('a.txt');
    expect(insideFolder('/w/proj', '/w/project/a.txt')).toBeUndefined();
    expect(insideFolder('/w/proj', '/w/proj')).toBeUndefined();
  });
});

describe('the / menu', () => {
  it('opens only for a / at the start, with the caret in its name', async () => {
    const { commandAt } = await import('../../src/webview/composer');
    expect(commandAt('/rev', 4)).toEqual({ start: 0, end: 4, query: 'rev' });
    expect(commandAt('/', 1)).toEqual({ start: 0, end: 1, query: '' });
    expect(commandAt('/review a.py', 12)).toBeUndefined();
    expect(commandAt('see /rev', 8)).toBeUndefined();
    expect(commandAt('/usr/bin', 8)).toBeUndefined(); // a path, not a command
  });

  it('lists the panel\'s commands first, a name once, and replaces the name being typed', async () => {
    const { applyCommand, commandChoices } = await import('../../src/webview/composer');
    const listed = [
      { name: 'review', description: 'r', hint: '', origin: 'user' as const },
      { name: 'remember', description: 'theirs', hint: '', origin: 'workspace' as const },
      { name: 'deploy', description: 'd', hint: '', origin: 'workspace' as const },
    ];
    expect(commandChoices(listed, 're').map((c) => [c.name, c.description.slice(0, 3)])).toEqual([['remember', 'pin'], ['review', 'r']]);
    expect(commandChoices(listed, 'D').map((c) => c.name)).toEqual(['deploy']);
    expect(applyCommand('/rev', { start: 0, end: 4, query: 'rev' }, 'review')).toEqual({ text: '/review ', caret: 8 });
    expect(applyCommand('/reXX tail', { start: 0, end: 3, query: 're' }, 'review')).toEqual({ text: '/review tail', caret: 8 });
  });
});
