/**
 * A permission card: what the tool would do (the whole command, the diff, or its input as a
 * short list), the choices with their keys (1, 2, 3...; Enter allows; Esc rejects and lets
 * the user say what the agent should do instead), and, for a file change, a way to review it
 * in the editor's diff view (accept or reject per hunk there).
 */
import type { PermissionOption } from '../protocol/types';
import type { PermissionItem } from '../state/reducer';
import { button, h, type Post } from './dom';
import { wholeTitle } from './toolCall';
import { commandOf, contentView, inputView, toolIcon } from './toolParts';

export function renderPermission(item: PermissionItem, post: Post): HTMLElement {
  if (item.status !== 'pending') return renderAnswered(item);
  const card = h('div', { class: `card permission status-${item.status}` });
  const call = item.toolCall;
  // A title the server cut at 100 characters, whole again from the call's input (as a tool
  // row's: issue 47, item 9); the card's title wraps, so all of its first line shows.
  const title = wholeTitle(call.title, call.rawInput);
  card.append(
    h(
      'div',
      { class: 'card-title', title: `Allow ${title.hover}?` },
      h('span', { class: `tool-icon kind-${call.toolKind}`, text: toolIcon(call.toolKind) }),
      h('span', { text: `Allow ${title.line}?` }),
    ),
  );
  const diffs = (call.content ?? []).filter((c) => c.type === 'diff');
  const command = commandOf(call.toolKind, call.rawInput);
  const review = diffs.length ? () => post({ type: 'reviewChange', requestId: item.requestId }) : undefined;
  if (diffs.length) for (const d of diffs) card.append(contentView(d, post, call.toolKind));
  else if (command !== undefined) card.append(h('pre', { class: 'code command', text: command }));
  else card.append(inputView(call.rawInput, post));
  card.tabIndex = -1;
  card.setAttribute('aria-label', `Permission: ${call.title}`);
  const answer = (option: PermissionOption | undefined, message?: string): void => {
    if (!option) return;
    post(message ? { type: 'permission', requestId: item.requestId, optionId: option.optionId, message } : { type: 'permission', requestId: item.requestId, optionId: option.optionId });
  };
  const allow = item.options.find((o) => o.kind === 'allow_once');
  const reject = item.options.find((o) => o.kind === 'reject_once');
  const actions = h('div', { class: 'card-actions' });
  item.options.forEach((option, index) => {
    const key = index < 9 ? `${index + 1}` : '';
    const b = button(option.name, () => answer(option), `${optionClass(option, allow)} option-${option.kind}`, key ? `Press ${key}` : undefined);
    if (key) b.prepend(h('kbd', { class: 'key', text: key }));
    actions.append(b);
  });
  if (review) actions.append(button('Review in editor', review, 'secondary review', 'Open the change in the diff editor: keep or revert each hunk, edit it, then accept or reject'));
  // "No, and tell the agent what to do instead": the rejection carries the user's words.
  const feedback = h('textarea', {
    class: 'feedback',
    attrs: { rows: '2', placeholder: 'What should the agent do instead? (Enter rejects with this; Esc again rejects without)', 'aria-label': 'What the agent should do instead' },
  });
  const tell = (): void => answer(reject, feedback.value.trim() || undefined);
  const feedbackRow = h('div', { class: 'feedback-row' }, feedback, button('Reject and tell the agent', tell, 'secondary tell'));
  feedbackRow.hidden = true;
  const openFeedback = (): void => {
    feedbackRow.hidden = false;
    feedback.focus();
  };
  const sayInstead = button('Reject and say what to do instead…', openFeedback, 'link say-instead', 'Esc');
  sayInstead.prepend(h('kbd', { class: 'key', text: 'Esc' }));
  actions.append(sayInstead);
  card.append(actions, feedbackRow, h('div', { class: 'meta keys-hint', text: `Keys: 1–${Math.min(9, item.options.length)} choose · Enter allows · Esc rejects and lets you say what to do instead` }));
  feedback.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      tell();
    } else if (e.key === 'Escape') {
      e.preventDefault();
      e.stopPropagation();
      if (!feedback.value.trim()) answer(reject);
      else {
        feedbackRow.hidden = true;
        card.focus();
      }
    }
    e.stopPropagation();
  });
  card.addEventListener('keydown', (e) => {
    if (e.target instanceof HTMLTextAreaElement || e.ctrlKey || e.metaKey || e.altKey) return;
    if (/^[1-9]$/.test(e.key)) {
      e.preventDefault();
      answer(item.options[Number(e.key) - 1]);
    } else if (e.key === 'Enter' && e.target === card) {
      // Only on the card itself: Enter on a button, or on a file link (to read the file
      // first), does what that control says, never "allow".
      e.preventDefault();
      answer(allow);
    } else if (e.key === 'Escape') {
      e.preventDefault();
      e.stopPropagation(); // not "stop the turn"
      openFeedback();
    }
  });
  return card;
}

/**
 * A question once answered: one line, in the past tense, with the choice (the tool row below
 * it shows the command or the change, which the card no longer repeats); the whole title on
 * hover.
 */
function renderAnswered(item: PermissionItem): HTMLElement {
  const chosen = item.options.find((o) => o.optionId === item.selected);
  const allowed = chosen?.kind.startsWith('allow') ?? false;
  const verdict = item.status === 'cancelled' ? 'Cancelled' : allowed ? 'Allowed' : 'Rejected';
  const line = h(
    'div',
    { class: `card permission status-${item.status} answered ${allowed ? 'allowed' : 'rejected'}`, attrs: { title: item.toolCall.title } },
    h('span', { class: 'verdict', text: `${allowed ? '✓' : '✗'} ${verdict}` }),
    h('span', { class: 'answered-title', text: item.toolCall.title }),
  );
  if (item.status !== 'cancelled' && chosen && chosen.kind !== 'allow_once' && chosen.kind !== 'reject_once') {
    line.append(h('span', { class: 'meta answered-choice', text: chosen.name }));
  } else if (chosen?.optionId === 'allow_outside') {
    line.append(h('span', { class: 'meta answered-choice', text: 'outside the sandbox' }));
  }
  return line;
}

/** The first "allow once" (Enter's) is the primary choice; the others, "Allow outside the
 * sandbox" and the "always" ones (they last the session), are quieter than it. */
function optionClass(option: PermissionOption, primary: PermissionOption | undefined): string {
  if (option === primary) return 'primary';
  switch (option.kind) {
    case 'reject_once':
      return 'secondary';
    default:
      return 'subtle';
  }
}
