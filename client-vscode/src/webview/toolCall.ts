/** A tool call in the transcript: its title (a click anywhere on the row opens or closes it;
 * the file it names opens from the small link after the title), its status, and, opened, what
 * it ran and what came back. */
import type { ToolCallItem } from '../state/reducer';
import { h, pathLink, type Post, type Toggles } from './dom';
import { literal } from './literal';
import { commandOf, contentView, inputView, scrollOutputsToEnd, toolIcon } from './toolParts';

export function renderToolCall(item: ToolCallItem, post: Post, toggles: Toggles): HTMLElement {
  const denial = denialOf(item);
  const status = denial ? 'rejected' : item.stopped ? 'stopped' : item.status;
  const details = toggles.collapsible(
    item.id,
    false,
    `tool status-${status}`,
    h('span', { class: `tool-icon kind-${item.toolKind}`, text: toolIcon(item.toolKind) }),
    titleView(item),
    ...openFile(item, post),
    h('span', { class: `tool-status status-${status}`, text: statusLabel(status) }),
  );
  const body = h('div', { class: 'tool-body' });
  if (denial) body.append(h('div', { class: 'denial', text: `Not run: ${denial.reason}.` }));
  if (denial?.message) body.append(h('div', { class: 'meta told', text: `You told the agent: ${denial.message}` }));
  if (item.stopped) body.append(h('div', { class: 'meta', text: 'Stopped with the turn, before it finished.' }));
  if (item.locations.length) {
    const where = h('div', { class: 'meta locations' });
    item.locations.forEach((l, i) => {
      if (i) where.append(document.createTextNode(', '));
      where.append(pathLink(post, l.path, l.line));
    });
    body.append(where);
  }
  const diffs = item.content.filter((c) => c.type === 'diff');
  const command = commandOf(item.toolKind, item.rawInput);
  if (command !== undefined) {
    body.append(h('div', { class: 'label', text: 'Command' }), h('pre', { class: 'code command', text: command }));
  } else if (item.rawInput !== undefined && diffs.length === 0) {
    body.append(h('div', { class: 'label', text: 'Input' }), inputView(item.rawInput, post));
  }
  if (item.content.length) {
    body.append(h('div', { class: 'label', text: diffs.length ? 'Change' : item.toolKind === 'execute' ? 'Output' : 'Result' }));
    item.content.forEach((c, index) => {
      const open = c.type === 'diff' && !denial ? () => post({ type: 'openDiff', itemId: item.id, index }) : undefined;
      body.append(contentView(c, post, item.toolKind, { open, openLabel: 'Review in editor' }));
    });
  } else if (item.rawOutput !== undefined && !denial && !item.stopped) {
    body.append(h('div', { class: 'label', text: 'Output' }), inputView(item.rawOutput, post));
  }
  details.append(body);
  // Opened: long output shows its end (the summary line), not its top.
  details.addEventListener('toggle', () => {
    if (details.open) scrollOutputsToEnd(details);
  });
  if (details.open) requestAnimationFrame(() => scrollOutputsToEnd(details));
  return details;
}

/** The title, the file it names set apart (`Read ` + README.md); text only: a click on it
 * opens the row, as anywhere on the row (issue 47: it opened the file instead). As much of it
 * as the row has room for, the whole on hover and when the row is open (issue 47, item 9). */
function titleView(item: ToolCallItem): HTMLElement {
  const whole = wholeTitle(item.title, item.rawInput);
  const title = h('span', { class: 'tool-title', title: literal(whole.hover) });
  const text = whole.line;
  const path = item.locations[0]?.path;
  const at = path ? text.lastIndexOf(path) : -1;
  if (!path || at < 0) {
    title.textContent = literal(text);
    return title;
  }
  title.append(
    literal(text.slice(0, at)),
    h('span', { class: 'tool-path', text: literal(path) }),
    literal(text.slice(at + path.length)),
  );
  return title;
}

/** A title the server shortened to a fixed length (an argument's first characters and `…`, or
 * its first line and ` …`) made whole again from the call's input: `line`, the argument's
 * first line in full (the row shows what fits), `hover`, the argument whole. A title the
 * input does not explain stays as it came. */
export function wholeTitle(title: string, rawInput: unknown): { line: string; hover: string } {
  const same = { line: title, hover: title };
  if (!title.includes('…') || typeof rawInput !== 'object' || rawInput === null) return same;
  for (const value of Object.values(rawInput as Record<string, unknown>)) {
    if (typeof value !== 'string') continue;
    const full = value.trim();
    const [first = '', ...rest] = full.split('\n');
    const more = rest.some((l) => l.trim()) ? ' …' : '';
    // Its first line cut short: the longest start of it right before a `…` in the title.
    for (let at = title.indexOf('…'); at >= 0; at = title.indexOf('…', at + 1)) {
      const before = title.slice(0, at).replace(/ $/, '');
      let n = Math.min(first.length, before.length);
      while (n > 0 && !before.endsWith(first.slice(0, n))) n -= 1;
      if (n < Math.min(8, first.length) || (n === first.length && !more)) continue;
      const start = before.length - n;
      const end = at + 1;
      return { line: title.slice(0, start) + first + more + title.slice(end), hover: title.slice(0, start) + full + title.slice(end) };
    }
  }
  return same;
}

/** The file a tool call names, as a small link after its title (it opens the file, not the
 * row); none when it names none. */
function openFile(item: ToolCallItem, post: Post): HTMLElement[] {
  const where = item.locations[0];
  if (!where) return [];
  const link = pathLink(post, where.path, where.line, '↗');
  link.classList.add('open-file');
  link.setAttribute('aria-label', link.title);
  return [link];
}

/** Why a tool call did not run, when the user (or a remembered answer) rejected it, and what
 * the user told the agent instead. */
function denialOf(item: ToolCallItem): { reason: string; message?: string } | undefined {
  const raw = item.rawOutput;
  if (item.status !== 'failed' || typeof raw !== 'object' || raw === null) return undefined;
  const r = raw as Record<string, unknown>;
  if (r['permission'] !== 'denied') return undefined;
  const reason = typeof r['reason'] === 'string' ? r['reason'] : 'permission was denied';
  return typeof r['message'] === 'string' ? { reason, message: r['message'] } : { reason };
}

function statusLabel(status: string): string {
  switch (status) {
    case 'pending':
      return 'pending';
    case 'in_progress':
      return 'running';
    case 'completed':
      return 'done';
    default:
      return status; // failed, rejected, stopped
  }
}
