/**
 * Workspace paths in what the model wrote, made into links to open them in the editor: an
 * inline code span that is a path (`src/app.py`, `notes/findings.md:12`), and a path with a
 * folder and an extension in plain text (src/inventory/models.py). Works on elements already
 * built (the sanitised markdown): links are made with the DOM, never from markup.
 */
import { pathLink, type Post } from './dom';

/** `path` or `path:line`; relative, no spaces, no scheme; a file name with an extension or a
 * path with a folder. */
const PATH = /^(?![a-z][\w+.-]*:\/\/)(?!\/\/)(\.{0,2}\/)?[\w@.+-]+(?:\/[\w@.+-]+)*\/?(?::(\d+))?$/i;
const HAS_EXTENSION = /\.[a-z0-9]{1,10}$/i;
/** In running text: a path with at least one folder and an extension. */
const IN_TEXT = /(?<![\w@/.:-])((?:\.{0,2}\/)?[\w@.+-]+(?:\/[\w@.+-]+)+\.[a-z0-9]{1,10})(?::(\d+))?(?![\w/])/gi;

/** The path and line a code span names, if it names one. */
export function pathOf(text: string): { path: string; line?: number } | undefined {
  const trimmed = text.trim();
  const match = PATH.exec(trimmed);
  if (!match) return undefined;
  const line = match[2] ? Number(match[2]) : undefined;
  const path = line ? trimmed.slice(0, trimmed.lastIndexOf(':')) : trimmed;
  if (path.startsWith('/') && !path.startsWith('./')) return undefined; // absolute: not ours to guess
  const name = path.replace(/\/$/, '');
  if (!name.includes('/') && !HAS_EXTENSION.test(name)) return undefined; // a word, not a file
  if (/^\d+(\.\d+)*$/.test(name) || /^v?\d+\.\d+/.test(name)) return undefined; // a version
  return line ? { path: name, line } : { path: name };
}

/** Turns the paths under `root` into links (not inside links, code blocks or existing ones). */
export function linkifyPaths(root: Element, post: Post): void {
  for (const code of Array.from(root.querySelectorAll('code'))) {
    if (code.closest('pre, a')) continue;
    const named = pathOf(code.textContent ?? '');
    if (!named) continue;
    const link = pathLink(post, named.path, named.line, code.textContent ?? '');
    link.classList.add('code-path');
    code.textContent = '';
    code.append(link);
  }
  const walker = root.ownerDocument.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const texts: Text[] = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = (node as Text).parentElement;
    if (parent && !parent.closest('a, pre, code')) texts.push(node as Text);
  }
  for (const text of texts) linkifyText(text, post);
}

function linkifyText(node: Text, post: Post): void {
  const value = node.data;
  IN_TEXT.lastIndex = 0;
  let match: RegExpExecArray | null;
  let last = 0;
  const parts: Node[] = [];
  while ((match = IN_TEXT.exec(value))) {
    const [whole, path = '', line] = match;
    if (match.index > last) parts.push(document.createTextNode(value.slice(last, match.index)));
    parts.push(pathLink(post, path, line ? Number(line) : undefined, whole));
    last = match.index + whole.length;
  }
  if (!parts.length) return;
  if (last < value.length) parts.push(document.createTextNode(value.slice(last)));
  node.replaceWith(...parts);
}
