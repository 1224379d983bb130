/**
 * The chat webview's HTML: a strict Content-Security-Policy with a per-load nonce; no inline
 * script or style; everything else comes from the extension's files. Pure, so the webview test
 * serves exactly this page.
 */

export interface WebviewHtmlOptions {
  /** `webview.cspSource` */
  cspSource: string;
  nonce: string;
  scriptUri: string;
  styleUri: string;
  /** Only for the sanitiser test, which must prove DOMPurify alone keeps model HTML inert. */
  omitCsp?: boolean;
}

export function contentSecurityPolicy(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    `img-src ${cspSource} data:`,
    `style-src ${cspSource} 'nonce-${nonce}'`,
    `font-src ${cspSource}`,
    `script-src 'nonce-${nonce}'`,
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
}

export function webviewHtml(o: WebviewHtmlOptions): string {
  const csp = o.omitCsp
    ? ''
    : `<meta http-equiv="Content-Security-Policy" content="${attr(contentSecurityPolicy(o.cspSource, o.nonce))}">`;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
${csp}
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${attr(o.styleUri)}" nonce="${attr(o.nonce)}">
<title>Agent</title>
</head>
<body>
<div id="app"></div>
<script nonce="${attr(o.nonce)}" src="${attr(o.scriptUri)}"></script>
</body>
</html>`;
}

/** 32 random alphanumerics. */
export function makeNonce(random: () => number = Math.random): string {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let nonce = '';
  for (let i = 0; i < 32; i++) nonce += chars.charAt(Math.floor(random() * chars.length));
  return nonce;
}

function attr(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
