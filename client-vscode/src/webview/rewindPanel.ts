/**
 * "Rewind here": the choices (the conversation, the files the agent wrote or edited since, or
 * both) and what would change, until the user confirms or cancels. With files to put back,
 * "Conversation and files" is the default, as Claude Code's rewind offers it: a rewind that
 * left the files as they are would leave the code ahead of the conversation.
 */
import type { RestoreChoice, RewindPreviewResult } from '../protocol/types';
import type { ViewState } from '../state/reducer';
import { button, h, pathLink, type Post } from './dom';

const RESTORE_CHOICES: readonly [RestoreChoice, string][] = [
  ['both', 'Conversation and files'],
  ['conversation', 'Conversation only'],
  ['files', 'Files only'],
];

export class RewindPanel {
  readonly el: HTMLElement;
  private shown: unknown;
  private choice: RestoreChoice | undefined;
  private entryId: string | undefined;

  constructor(private readonly post: Post) {
    this.el = h('div', { class: 'rewind-panel', attrs: { role: 'dialog', 'aria-label': 'Rewind' } });
    this.el.hidden = true;
    this.el.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') {
        e.stopPropagation();
        this.post({ type: 'rewindCancel' });
      }
    });
  }

  render(state: ViewState): void {
    const rewind = state.rewind;
    if (rewind === this.shown) return;
    this.shown = rewind;
    const panel = this.el;
    panel.textContent = '';
    panel.hidden = !rewind;
    if (!rewind) return;
    if (rewind.entryId !== this.entryId) {
      this.entryId = rewind.entryId;
      this.choice = undefined;
    }
    const preview = rewind.preview;
    panel.append(h('div', { class: 'card-title', text: preview?.prompt ? 'Rewind to before this prompt' : 'Rewind to after this answer' }));
    if (!preview) {
      panel.append(h('div', { class: 'meta', text: 'Checking which files would change…' }), button('Cancel', () => this.post({ type: 'rewindCancel' }), 'secondary'));
      return;
    }
    const hasFiles = preview.files.length > 0;
    if (!hasFiles) this.choice = 'conversation';
    else this.choice ??= 'both';
    const choices = h('div', { class: 'rewind-choices', attrs: { role: 'radiogroup' } });
    for (const [choice, label] of RESTORE_CHOICES) {
      const input = h('input', { attrs: { type: 'radio', name: 'rewind-choice', value: choice } });
      input.checked = this.choice === choice;
      input.disabled = choice !== 'conversation' && !hasFiles;
      input.addEventListener('change', () => (this.choice = choice));
      choices.append(h('label', { class: `choice choice-${choice}` }, input, h('span', { text: label })));
    }
    panel.append(choices, rewindFiles(preview, this.post));
    panel.append(
      h(
        'div',
        { class: 'card-actions' },
        button('Rewind', () => this.post({ type: 'rewind', entryId: rewind.entryId, restore: this.choice ?? 'conversation' }), 'primary rewind-go'),
        button('Cancel', () => this.post({ type: 'rewindCancel' }), 'secondary rewind-cancel'),
      ),
    );
    for (const b of panel.querySelectorAll('button')) b.disabled = rewind.busy;
  }
}

/** What a rewind would change, for the user to see before confirming. */
function rewindFiles(preview: RewindPreviewResult, post: Post): HTMLElement {
  const el = h('div', { class: 'rewind-files' });
  if (preview.files.length === 0) {
    el.append(h('div', { class: 'meta', text: 'No file the agent wrote or edited since then.' }));
  } else {
    el.append(h('div', { class: 'label', text: 'Files a restore puts back' }));
    const list = h('ul', { class: 'file-list' });
    for (const f of preview.files) {
      const what = f.action === 'delete' ? 'delete (did not exist then)' : 'restore';
      const warn = f.changedSince ? ' · changed since the agent’s edit: those changes are lost too' : '';
      list.append(
        h('li', { class: `file action-${f.action}${f.changedSince ? ' changed-since' : ''}` }, pathLink(post, f.path), h('span', { text: ` — ${what}${warn}` })),
      );
    }
    el.append(
      list,
      button('Show the changes', () => post({ type: 'showChangesSince', entryId: preview.entryId }), 'secondary rewind-changes', 'What the agent changed since then, against the files now, in the diff editor'),
    );
  }
  const { commands, files, moreFiles } = preview.notRestorable;
  if (commands.length || files.length) {
    // A short heading (the labels are small capitals); what it covers in plain words below.
    el.append(
      h('div', { class: 'label', text: 'Cannot be undone' }),
      h('div', { class: 'rewind-note', text: 'Commands run since (what they changed is not tracked), and files changed otherwise:' }),
    );
    const list = h('ul', { class: 'file-list not-restorable' });
    for (const c of commands) list.append(h('li', { class: 'command', text: `$ ${c}` }));
    for (const f of files) list.append(h('li', { class: 'file' }, pathLink(post, f)));
    if (moreFiles) list.append(h('li', { class: 'meta', text: `and ${moreFiles} more files` }));
    el.append(list);
  }
  return el;
}
