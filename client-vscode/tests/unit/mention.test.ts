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
