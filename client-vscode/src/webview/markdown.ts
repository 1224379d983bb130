/**
 * Model text to HTML: marked for markdown, DOMPurify for safety. Nothing the model wrote
 * reaches the DOM except through `renderMarkdown` (sanitised HTML) or `textContent`.
 */
import DOMPurify from 'dompurify';
import { Marked } from 'marked';

const marked = new Marked({ gfm: true, breaks: false, async: false });

const purify = DOMPurify(window);

purify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    node.setAttribute('rel', 'noopener noreferrer');
    node.removeAttribute('target');
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
    html = marked.parse(text) as string;
  } catch {
    html = `<pre>${escapeHtml(text)}</pre>`;
  }
  return purify.sanitize(html, CONFIG);
}

export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
