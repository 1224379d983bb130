/**
 * The view's DOM helpers: elements whose text is always set as text (through `literal`), and
 * buttons. Nothing here parses markup.
 */
import type { WebviewToHost } from '../view/messages';
import { literal } from './literal';

export type Post = (message: WebviewToHost) => void;

export interface Props {
  class?: string;
  text?: string;
  title?: string;
  attrs?: Record<string, string>;
}

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: (Node | null | undefined | false)[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (props.class) el.className = props.class;
  // Every text the view shows goes through `literal`: nothing the model wrote can hide,
  // reorder or disguise characters.
  if (props.text !== undefined) el.textContent = literal(props.text);
  if (props.title) el.title = literal(props.title);
  if (props.attrs) for (const [k, v] of Object.entries(props.attrs)) el.setAttribute(k, v);
  for (const child of children) if (child) el.appendChild(child);
  return el;
}

export function button(label: string, onClick: () => void, cls = '', title?: string): HTMLButtonElement {
  const b = h('button', { class: cls, text: label, title, attrs: { type: 'button' } });
  b.addEventListener('click', (e) => {
    e.preventDefault();
    e.stopPropagation();
    onClick();
  });
  return b;
}

/** A workspace path the user can open in the editor (the host opens it with `vscode.open`;
 * the view only says which path, as text). */
export function pathLink(post: Post, path: string, line?: number, label?: string): HTMLAnchorElement {
  const shown = label ?? (line ? `${path}:${line}` : path);
  const a = h('a', { class: 'path-link', text: shown, title: `Open ${path}${line ? ` at line ${line}` : ''}`, attrs: { href: '#', role: 'link' } });
  a.dataset['path'] = path;
  if (line) a.dataset['line'] = String(line);
  a.addEventListener('click', (e) => {
    e.preventDefault();
    e.stopPropagation(); // inside a <summary>: open the file, not the details
    post(line ? { type: 'open', path, line } : { type: 'open', path });
  });
  return a;
}

/** A collapsible part whose open/closed state the user chose survives re-renders. */
export class Toggles {
  private readonly toggled = new Set<string>();

  collapsible(key: string, openByDefault: boolean, cls: string, ...summary: Node[]): HTMLDetailsElement {
    const details = h('details', { class: cls });
    details.open = this.toggled.has(key) ? !openByDefault : openByDefault;
    details.append(h('summary', {}, ...summary));
    details.addEventListener('toggle', () => {
      if (details.open !== openByDefault) this.toggled.add(key);
      else this.toggled.delete(key);
    });
    return details;
  }
}
