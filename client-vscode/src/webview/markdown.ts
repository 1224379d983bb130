/**
 * Model text to HTML: marked for markdown, DOMPurify for safety. Nothing the model wrote
 * reaches the DOM except through `renderMarkdown` (sanitised HTML) or `textContent`.
 *
 * Shown literally, like the terminal does: raw HTML in the markdown is printed as text (a
 * comment or a hidden span would otherwise vanish), a link shows its target after its text,
 * an image is its `![alt](src)` source, and control and bidi characters are escapes.
 */
import DOMPurify from 'dompurify';
import { Marked } from 'marked';
import type { Post } from './dom';
import { linkifyPaths } from './links';
import { literal } from './literal';

const marked = new Marked({ gfm: true, breaks: false, async: false });
marked.use({
  renderer: {
    html({ text }) {
      return escapeHtml(text);
    },
    image({ href, text }) {
      return escapeHtml(`![${text}](${href})`);
    },
  },
});

const purify = DOMPurify(window);

// A link's target as the model wrote it: the sanitiser drops an unsafe one (`javascript:`),
// which must still show, or the link would look like harmless text.
const written = new WeakMap<Element, string>();
purify.addHook('beforeSanitizeAttributes', (node) => {
  const href = node.tagName === 'A' ? node.getAttribute('href') : null;
  if (href !== null) written.set(node, href);
});

purify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    node.setAttribute('rel', 'noopener noreferrer');
    node.removeAttribute('target');
    const href = written.get(node) ?? node.getAttribute('href');
    if (href && node.textContent !== href) {
      node.setAttribute('title', href);
      const target = node.ownerDocument.createElement('span');
      target.className = 'link-target';
      target.textContent = ` (${href})`;
      node.after(target);
    }
  }
});

const CONFIG = {
  USE_PROFILES: { html: true },
  FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'option', 'iframe', 'object', 'embed'],
  FORBID_ATTR: ['style', 'srcset', 'action', 'formaction'],
  ALLOW_DATA_ATTR: false,
};

/** Sanitised HTML for markdown text; safe to assign to innerHTML. */
export function renderMarkdown(text: string): string {
  let html: string;
  try {
    html = marked.parse(literal(text)) as string;
  } catch {
    html = `<pre>${escapeHtml(literal(text))}</pre>`;
  }
  return purify.sanitize(html, CONFIG);
}

export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** Markdown as an element, the workspace paths in it as links that open the file. */
export function markdownView(text: string, post: Post, cls = 'body markdown'): HTMLElement {
  const body = document.createElement('div');
  body.className = cls;
  body.innerHTML = renderMarkdown(text); // sanitised by DOMPurify
  linkifyPaths(body, post);
  return body;
}
