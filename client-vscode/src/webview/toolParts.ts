/**
 * What a tool call shows, in a card or a transcript entry: its command, its input as a short
 * list (paths as links), a file change as a diff (with a link to the file and a way into the
 * editor's diff), and its output (colours from ANSI codes; long output opens at its end).
 */
import type { ToolCallContent, ToolKind } from '../protocol/types';
import { ansiNodes } from './ansi';
import { button, h, pathLink, type Post } from './dom';
import { imageElement } from './messageItems';

/** The command of a command tool (kind `execute`), shown whole instead of as JSON. */
export function commandOf(kind: string, rawInput: unknown): string | undefined {
  if (kind !== 'execute' || typeof rawInput !== 'object' || rawInput === null) return undefined;
  const command = (rawInput as Record<string, unknown>)['command'];
  return typeof command === 'string' ? command : undefined;
}

const PATH_KEYS = new Set(['path', 'file', 'file_path', 'filePath', 'directory', 'dir', 'cwd']);

/** A tool's input as a short list (`path: README.md`, `pattern: TODO`), paths as links; JSON
 * only when it is not a flat object. */
export function inputView(rawInput: unknown, post: Post): HTMLElement {
  if (typeof rawInput !== 'object' || rawInput === null || Array.isArray(rawInput)) {
    return h('pre', { class: 'code', text: json(rawInput) });
  }
  const entries = Object.entries(rawInput as Record<string, unknown>);
  const flat = entries.every(([, v]) => v === null || ['string', 'number', 'boolean'].includes(typeof v));
  if (!flat || entries.length === 0) return h('pre', { class: 'code', text: json(rawInput) });
  const list = h('dl', { class: 'input-list' });
  for (const [key, value] of entries) {
    const text = value === null ? 'null' : String(value);
    const multiline = text.includes('\n') || text.length > 160;
    const shown =
      PATH_KEYS.has(key) && typeof value === 'string' && value && !value.includes('\n')
        ? h('dd', {}, pathLink(post, value))
        : multiline
          ? h('dd', {}, h('pre', { class: 'code', text }))
          : h('dd', { class: 'input-value', text });
    list.append(h('dt', { text: key }), shown);
  }
  return list;
}

export interface DiffActions {
  /** "Open diff": the change in the editor's diff view. */
  open?: () => void;
  openLabel?: string;
}

/** A tool's content: text (command output with its colours), an image it returned (an MCP
 * tool's screenshot), or a file change as a diff. */
export function contentView(c: ToolCallContent, post: Post, kind: ToolKind | string, actions: DiffActions = {}): HTMLElement {
  if (c.type === 'content') {
    const returned = c.content;
    if (returned.type === 'image') return imageElement(returned);
    if (kind !== 'execute') return h('pre', { class: 'code', text: returned.text });
    const pre = h('pre', { class: 'code output' });
    pre.append(...ansiNodes(returned.text));
    return pre;
  }
  const created = c.oldText === null;
  const head = h('div', { class: 'meta diff-path' }, document.createTextNode(created ? 'New file ' : ''), pathLink(post, c.path));
  if (actions.open) head.append(button(actions.openLabel ?? 'Open diff', actions.open, 'link open-diff', 'Open this change in the editor\u2019s diff view'));
  const el = h('div', { class: `diff${created ? ' created' : ''}` }, head);
  const pre = h('pre', { class: 'code diff-lines' });
  const lines = (c.diff ?? fallbackDiff(c.oldText, c.newText)).replace(/\n$/, '').split('\n');
  for (const line of lines) {
    if (line.startsWith('+++') || line.startsWith('---')) continue;
    const cls = line.startsWith('+') ? 'add' : line.startsWith('-') ? 'del' : line.startsWith('@@') ? 'hunk' : 'ctx';
    pre.append(h('span', { class: `line ${cls}`, text: `${line}\n` }));
  }
  el.append(pre);
  return el;
}

/** Without the server's unified diff: every old line removed, every new line added. */
function fallbackDiff(oldText: string | null, newText: string): string {
  const removed = oldText === null ? [] : oldText.split('\n').map((l) => `-${l}`);
  return [...removed, ...newText.split('\n').map((l) => `+${l}`)].join('\n');
}

/** Long output opens at its end, where a command prints its summary (`5 passed`). */
export function scrollOutputsToEnd(root: Element): void {
  for (const pre of Array.from(root.querySelectorAll<HTMLElement>('pre.output'))) pre.scrollTop = pre.scrollHeight;
}

export function toolIcon(kind: string): string {
  switch (kind) {
    case 'read':
      return '▤';
    case 'edit':
      return '✎';
    case 'search':
      return '⌕';
    case 'execute':
      return '▶';
    default:
      return '◆';
  }
}

export function json(value: unknown): string {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}
