import { describe, expect, it } from 'vitest';
import { contentSecurityPolicy, makeNonce, webviewHtml } from '../../src/view/html';

describe('webview HTML', () => {
  it('has a strict CSP: nonce scripts only, no inline or eval', () => {
    const csp = contentSecurityPolicy('https://x.vscode-cdn.net', 'abc123');
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'nonce-abc123'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
    const html = webviewHtml({ cspSource: 'https://x.vscode-cdn.net', nonce: 'abc123', scriptUri: 'https://x/w.js', styleUri: 'https://x/c.css' });
    expect(html).toContain('http-equiv="Content-Security-Policy"');
    expect(html).toContain('<script nonce="abc123" src="https://x/w.js"></script>');
    expect(html.match(/<script/g)).toHaveLength(1);
  });

  it('makes 32-character alphanumeric nonces', () => {
    expect(makeNonce()).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(makeNonce()).not.toBe(makeNonce());
  });
});
