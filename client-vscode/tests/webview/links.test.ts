import { describe, expect, it } from 'vitest';
import { pathOf } from '../../src/webview/links';

describe('paths in what the model wrote', () => {
  it('reads a file path, with a line, or a folder path', () => {
    expect(pathOf('src/app.py')).toEqual({ path: 'src/app.py' });
    expect(pathOf('README.md')).toEqual({ path: 'README.md' });
    expect(pathOf('notes/findings.md:12')).toEqual({ path: 'notes/findings.md', line: 12 });
    expect(pathOf('./setup.py')).toEqual({ path: './setup.py' });
    expect(pathOf('src/inventory/')).toEqual({ path: 'src/inventory' });
  });

  it('leaves alone what is not a workspace path', () => {
    for (const text of ['pytest -q', 'parse', '1.2.3', 'v2.0', 'https://example.com/a.md', '/etc/passwd', 'a b.py', '`x`', '']) {
      expect(pathOf(text), text).toBeUndefined();
    }
  });
});
