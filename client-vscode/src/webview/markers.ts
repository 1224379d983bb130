/** What the transcript shows between messages: compactions (with the summary the model now
 * sees), overflows and what the server did, notices (a retry shrinks once it worked), rewinds,
 * model and thinking changes, restored files. */
import { formatTokens } from '../state/meter';
import type {
  BranchItem,
  CompactionItem,
  FileRestoreItem,
  ModelChangeItem,
  NoticeItem,
  OverflowItem,
} from '../state/reducer';
import { h, pathLink, type Post, type Toggles } from './dom';
import { markdownView } from './markdown';

export function renderCompaction(item: CompactionItem, post: Post, toggles: Toggles): HTMLElement {
  const reason = item.reason ? ` (${reasonLabel(item.reason)})` : '';
  let headline: string;
  switch (item.status) {
    case 'started':
      headline = `Compacting context${reason}: ${formatTokens(item.tokensBefore)} tokens…`;
      break;
    case 'completed':
      headline =
        `Context compacted${reason}: ${formatTokens(item.tokensBefore)} → ` +
        `${item.tokensAfter !== undefined ? formatTokens(item.tokensAfter) : '?'} tokens`;
      break;
    case 'failed':
      headline = `Compaction failed${reason}${item.error ? `: ${item.error}` : ''}`;
      break;
    case 'cancelled':
      headline = `Compaction cancelled${reason}${item.error ? `: ${item.error}` : ''}`;
      break;
  }
  const el = h(
    'div',
    { class: `marker compaction status-${item.status}`, attrs: { role: 'separator' } },
    h('div', { class: 'marker-line', text: headline, title: 'Everything above is summarised for the model; the full history stays in the session log.' }),
  );
  if (item.summary) {
    const details = toggles.collapsible(`${item.id}:summary`, false, 'summary', h('span', { text: 'Summary the model sees' }));
    details.append(markdownView(item.summary, post));
    el.append(details);
  }
  return el;
}

/** One overflow, as it goes: compacting (a warning), retrying, then a quiet line once the turn
 * went on; a give-up says why and what to do. */
export function renderOverflow(item: OverflowItem, toggles: Toggles): HTMLElement {
  const what = item.overflow === 'truncated' ? 'The reply was cut off by the context window' : item.overflow === 'estimated' ? 'The request would not fit the context window' : 'The provider refused the prompt as too long';
  if (item.action === 'gaveUp') {
    return h(
      'div',
      { class: 'notice overflow error gave-up' },
      h('strong', { text: `Context overflow: ${what}; compacting could not make it fit.` }),
      h('div', { class: 'meta', text: item.message }),
    );
  }
  if (item.resolved) {
    const details = toggles.collapsible(
      `${item.id}:steps`,
      false,
      'marker overflow resolved',
      h('span', { class: 'marker-line', text: `${what}: compacted once and retried: it worked.` }),
    );
    for (const step of item.steps) details.append(h('div', { class: 'meta', text: step.message }));
    return details;
  }
  const doing = item.action === 'compacting' ? 'compacting the history, then retrying once…' : 'compacted; retrying once…';
  return h(
    'div',
    { class: `notice overflow warning ${item.action}` },
    h('strong', { text: `${what}: ${doing}` }),
    h('div', { class: 'meta', text: item.message }),
  );
}

export function renderNotice(item: NoticeItem, toggles: Toggles): HTMLElement {
  if (item.retry && item.resolved) {
    // It worked: a quiet line (the provider's words one click away), not a big yellow box.
    const details = toggles.collapsible(
      `${item.id}:retry`,
      false,
      'notice retry resolved',
      h('span', { text: `Retried after a provider error (attempt ${item.retry.attempt} of ${item.retry.attempts}): it went through.` }),
    );
    details.append(h('div', { class: 'meta', text: item.message }));
    return details;
  }
  return h('div', { class: `notice ${item.level}${item.retry ? ' retry' : ''}`, text: item.message });
}

export function renderBranch(_item: BranchItem): HTMLElement {
  return h(
    'div',
    { class: 'marker branch', attrs: { role: 'separator' } },
    h('div', { class: 'marker-line', text: 'Rewound: continued from an earlier message' }),
  );
}

export function renderModelChange(item: ModelChangeItem): HTMLElement {
  const thinking = item.thinking && item.thinking !== 'off' ? ` · thinking ${item.thinking}` : '';
  const el = h(
    'div',
    { class: 'marker model-change', attrs: { role: 'separator' } },
    h('div', { class: 'marker-line', text: `Model: ${item.model}${thinking}` }),
  );
  if (item.note) {
    // Two lines, left-aligned; a click shows the rest (issue 47: three centred paragraphs
    // filled the panel).
    const note = h('div', { class: 'meta model-note clamped', text: item.note, title: 'Click to show all' });
    note.addEventListener('click', () => note.classList.toggle('clamped'));
    el.append(note);
  }
  return el;
}

export function renderFileRestore(item: FileRestoreItem, post: Post): HTMLElement {
  const n = item.files.length;
  const el = h(
    'div',
    { class: 'marker file-restore', attrs: { role: 'separator' } },
    h('div', { class: 'marker-line', text: `Files restored: ${n} file${n === 1 ? '' : 's'}` }),
  );
  const list = h('ul', { class: 'file-list' });
  for (const f of item.files) {
    list.append(h('li', {}, f.action === 'delete' ? h('span', { text: f.path }) : pathLink(post, f.path), h('span', { text: ` — ${f.action === 'delete' ? 'deleted' : 'restored'}` })));
  }
  el.append(list);
  return el;
}

function reasonLabel(reason: string): string {
  switch (reason) {
    case 'threshold':
      return 'near the window';
    case 'overflow':
      return 'after an overflow';
    case 'truncation':
      return 'after a cut-off reply';
    case 'manual':
      return 'on request';
    case 'requested':
      return 'asked for by the model';
    case 'idle':
      return 'after an idle pause';
    default:
      return reason;
  }
}
