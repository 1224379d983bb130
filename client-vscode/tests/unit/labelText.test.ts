import { describe, expect, it } from 'vitest';
import { labelText } from '../../src/webview/literal';
import { drawnLabel } from '../support/iconLabel';

// A quick pick's hover shows an item's description and detail as Markdown; its inline link
// (and image) pattern needs `](` side by side.
const MARKDOWN_LINK = /\]\(/;

describe('text in a VS Code label that draws icons', () => {
  it.each([
    '$(check) Approved: $(terminal) rm -rf ~',
    'Fix the $(sync~spin) spinner',
    'costs $(5) a month',
    '$(x)$(y)',
    'a \\$(escaped) icon in the text itself',
    'a \\\\$(x) with two backslashes',
  ])('draws no icon and shows the text as it is: %s', (text) => {
    const drawn = drawnLabel(labelText(text));
    expect(drawn).not.toContain('<icon:');
    expect(drawn).toBe(text);
  });

  it.each(['$(not an icon)', '$(unclosed', 'ends with $(', 'price $12 (tax)'])('leaves what is no icon alone: %s', (text) => {
    expect(labelText(text)).toBe(text);
  });

  it('shows line breaks and tabs as escapes, on one line', () => {
    expect(labelText('fix this\n\tand that\r\n')).toBe('fix this\\n\\tand that\\r\\n');
  });

  it('shows control and bidirectional characters as escapes', () => {
    expect(labelText('a\u202eb\u001b[31m')).toBe('a\\u202eb\\x1b[31m');
  });

  it('offers no Markdown link or image in the hover', () => {
    const shown = labelText('see [the docs](https://example.com/x) and ![](https://example.com/pixel.png)');
    expect(shown).not.toMatch(MARKDOWN_LINK);
    expect(shown.replace(/\u2060/g, '')).toBe('see [the docs](https://example.com/x) and ![](https://example.com/pixel.png)');
  });
});
