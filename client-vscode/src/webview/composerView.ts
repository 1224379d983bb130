/**
 * The prompt box: typing, @-mention completion, pasted or dropped images, prompts typed ahead
 * (Enter during a turn queues the prompt; it goes when the turn ends), Esc to stop, and the
 * line that says what the agent is doing.
 */
import type { ImageContent } from '../protocol/types';
import type { ViewState } from '../state/reducer';
import { applyCommand, applyMention, commandAt, commandChoices, imageFromDataUrl, imageProblem, mentionAt, mentionsFromUris, type MentionToken } from './composer';
import { button, h, type Post } from './dom';
import { literal } from './literal';
import { imageElement } from './messageItems';

/** One line of the completion list: a workspace path (@-mention) or a command (`/`). */
interface Choice {
  label: string;
  detail?: string;
  kind: string;
}

const PLACEHOLDER_IDLE = 'Ask the agent… (Enter to send, Shift+Enter for a new line)';
const PLACEHOLDER_BUSY = 'Type ahead: Enter queues it for when the agent is done · Esc stops the agent';
const PLACEHOLDER_RESTORING = 'Opening your last session… Enter queues the prompt for it';

export class Composer {
  readonly el: HTMLElement;
  readonly input: HTMLTextAreaElement;
  private readonly sendButton: HTMLButtonElement;
  private readonly stopButton: HTMLButtonElement;
  private readonly status: HTMLElement;
  private readonly queueEl: HTMLElement;
  /** Completions for the @-mention at the caret. */
  private readonly mentionList: HTMLElement;
  private mention: MentionToken | undefined;
  /** The `/command` being typed at the start of the box, if any (the list shows commands). */
  private command: MentionToken | undefined;
  private mentionIndex = 0;
  /** Images pasted or dropped, sent with the next prompt. */
  private readonly imageStrip: HTMLElement;
  private images: ImageContent[] = [];
  private readonly note: HTMLElement;
  private state: ViewState | undefined;
  private shownQueue: unknown;
  /** A key pressed in the box, or the box clicked or tabbed into, since the user last sent
   * a prompt from it. */
  private turnedTo = false;

  constructor(
    private readonly post: Post,
    draft: string,
  ) {
    this.input = h('textarea', { class: 'prompt', attrs: { rows: '2', placeholder: PLACEHOLDER_IDLE, 'aria-label': 'Prompt' } });
    this.input.value = draft;
    // The user turning to the box (a key, a click, Tab into it): a new permission card leaves
    // the focus here, so a key meant for the box does not answer the card.
    this.input.addEventListener('pointerdown', () => (this.turnedTo = true));
    this.input.addEventListener('focus', (e) => {
      // From another element of the view (Tab); not the view itself getting the focus back.
      if (e.relatedTarget) this.turnedTo = true;
    });
    this.input.addEventListener('keydown', (e) => {
      this.turnedTo = true;
      if (this.mentionKey(e)) return;
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        this.submit();
      } else if (e.key === 'Escape' && this.state && this.state.turn.status === 'running') {
        e.preventDefault();
        e.stopPropagation();
        this.post({ type: 'stop' });
      }
    });
    this.sendButton = button('Send', () => this.submit(), 'primary send');
    this.stopButton = button('Stop', () => this.post({ type: 'stop' }), 'danger stop', 'Stop the agent (Esc)');
    this.status = h('div', { class: 'turn-status', attrs: { role: 'status' } });
    this.queueEl = h('div', { class: 'queue', attrs: { 'aria-label': 'Prompts typed ahead' } });
    this.queueEl.hidden = true;
    this.mentionList = h('div', { class: 'mentions', attrs: { role: 'listbox', 'aria-label': 'Workspace files' } });
    this.mentionList.hidden = true;
    this.input.addEventListener('input', () => this.updateMention());
    this.input.addEventListener('click', () => this.updateMention());
    this.input.addEventListener('blur', () => setTimeout(() => this.closeMentions(), 150));
    this.input.addEventListener('paste', (e) => {
      const files = [...(e.clipboardData?.files ?? [])];
      if (files.length === 0) return;
      e.preventDefault();
      this.addImages(files);
    });
    this.imageStrip = h('div', { class: 'image-strip' });
    this.imageStrip.hidden = true;
    this.note = h('div', { class: 'composer-note meta', attrs: { role: 'status' } });
    this.el = h(
      'div',
      { class: 'composer' },
      this.queueEl,
      this.mentionList,
      this.imageStrip,
      this.input,
      this.note,
      h('div', { class: 'composer-actions' }, this.status, this.stopButton, this.sendButton),
    );
    this.el.addEventListener('dragover', (e) => {
      const types = e.dataTransfer?.types ?? [];
      if (types.includes('Files') || types.includes('text/uri-list')) {
        e.preventDefault();
        this.el.classList.add('dropping');
      }
    });
    this.el.addEventListener('dragleave', () => this.el.classList.remove('dropping'));
    this.el.addEventListener('drop', (e) => {
      this.el.classList.remove('dropping');
      // Files from the explorer (Shift while dropping, in VS Code) come as URIs: mention them.
      const uris = e.dataTransfer?.getData('text/uri-list') ?? '';
      const mentions = uris && this.state?.workspaceUri ? mentionsFromUris(uris, this.state.workspaceUri) : [];
      if (mentions.length) {
        e.preventDefault();
        this.insertText(mentions.join(' ') + ' ');
        return;
      }
      const files = [...(e.dataTransfer?.files ?? [])];
      if (files.length === 0) return;
      e.preventDefault();
      this.addImages(files);
    });
  }

  render(state: ViewState): void {
    this.state = state;
    const running = state.server.status === 'running';
    const busy = state.turn.status !== 'idle';
    this.stopButton.hidden = !busy;
    this.stopButton.disabled = state.turn.status === 'stopping';
    // During a turn (or while the last session reopens) Send queues the prompt.
    this.sendButton.textContent = busy || state.restoring ? 'Queue' : 'Send';
    this.sendButton.title = busy || state.restoring ? 'Send it when the agent is done (Enter)' : 'Send (Enter)';
    this.sendButton.disabled = !running || !state.workspaceUri;
    this.input.disabled = !running;
    this.input.placeholder = state.restoring ? PLACEHOLDER_RESTORING : busy ? PLACEHOLDER_BUSY : PLACEHOLDER_IDLE;
    this.status.textContent =
      state.turn.status === 'stopping'
        ? 'Stopping…'
        : state.compacting
          ? 'Compacting context…'
          : busy
            ? 'Working… (Esc stops)'
            : state.restoring
              ? 'Opening your last session…'
              : '';
    this.renderQueue(state);
    this.renderMentions(state);
  }

  get draft(): string {
    return this.input.value;
  }

  /** The user asked for the box (the editor's "focus the prompt" command). */
  focus(): void {
    this.turnedTo = true;
    this.input.focus();
  }

  /** Whether the user may be writing a prompt: the box has the focus and holds text, or the
   * user turned to it (a key, a click, Tab) since sending the last prompt. A user who sent a
   * prompt and waits has not: a permission card may take the focus, to be answered by keys. */
  get typing(): boolean {
    return document.activeElement === this.input && (this.input.value.trim() !== '' || this.turnedTo);
  }

  /** Text the user asked to add (an @-mention of the editor's selection), at the caret,
   * followed by a space to go on typing. */
  insert(text: string): void {
    this.turnedTo = true;
    this.insertText(`${text} `);
  }

  /** Puts a prompt back in the box, to edit and send again. */
  restore(text: string, images: readonly ImageContent[] = []): void {
    this.input.value = text;
    this.setImages([...images]);
    this.input.dispatchEvent(new Event('input', { bubbles: true }));
    this.input.focus();
  }

  private submit(): void {
    const text = this.input.value.trim();
    if (!text && this.images.length === 0) return;
    if (!this.state || this.state.server.status !== 'running') return;
    this.post(this.images.length ? { type: 'send', text, images: this.images } : { type: 'send', text });
    this.input.value = '';
    this.turnedTo = false;
    this.setImages([]);
    this.closeMentions();
    // The saved draft follows the box (it is saved on `input`): a reload must not bring the
    // sent prompt back.
    this.input.dispatchEvent(new Event('input', { bubbles: true }));
  }

  private renderQueue(state: ViewState): void {
    const key = `${state.queue.map((q) => q.id).join(',')}|${state.turn.status}|${state.restoring}`;
    if (key === this.shownQueue) return;
    this.shownQueue = key;
    this.queueEl.textContent = '';
    this.queueEl.hidden = state.queue.length === 0;
    const waiting = state.turn.status === 'idle' && !state.restoring;
    if (waiting && state.queue.length) {
      this.queueEl.append(h('div', { class: 'meta', text: 'Typed ahead, waiting: the last turn did not finish. Send it now, or remove it.' }));
    }
    for (const queued of state.queue) {
      const row = h(
        'div',
        { class: 'queued' },
        h('span', { class: 'queued-label', text: 'Queued' }),
        h('span', { class: 'queued-text', text: queued.text || `${queued.images.length} image(s)`, title: queued.text }),
      );
      if (waiting) row.append(button('Send now', () => this.post({ type: 'sendQueued', id: queued.id }), 'link send-queued'));
      row.append(button('×', () => this.post({ type: 'removeQueued', id: queued.id }), 'link remove-queued', 'Remove (it is not sent)'));
      this.queueEl.append(row);
    }
  }

  // ---- mentions and images -----------------------------------------------------------------

  private updateMention(): void {
    const caret = this.input.selectionStart ?? this.input.value.length;
    const command = commandAt(this.input.value, caret);
    if (command) {
      if (!this.command) this.post({ type: 'listCommands' }); // a new `/`: files may have changed
      if (command.query !== this.command?.query) this.mentionIndex = 0;
      this.command = command;
      this.mention = undefined;
      if (this.state) this.renderMentions(this.state);
      return;
    }
    this.command = undefined;
    const token = mentionAt(this.input.value, caret);
    const changed = token?.query !== this.mention?.query || (token === undefined) !== (this.mention === undefined);
    this.mention = token;
    if (!token) return this.closeMentions();
    if (changed) {
      this.mentionIndex = 0;
      this.post({ type: 'completeMention', query: token.query });
    }
    if (this.state) this.renderMentions(this.state);
  }

  private closeMentions(): void {
    this.mention = undefined;
    this.command = undefined;
    this.mentionList.hidden = true;
    this.mentionList.textContent = '';
  }

  /** What the list offers at the caret: commands after a `/` at the start, else the
   * completions of the @-mention (an older answer is not shown). */
  private currentChoices(state: ViewState): Choice[] {
    if (this.command) {
      return commandChoices(state.commands ?? [], this.command.query).map((c) => ({
        label: `/${c.name}${c.hint ? ` ${c.hint}` : ''}`,
        detail: c.description,
        kind: 'command',
      }));
    }
    const listed = state.mentions;
    if (!this.mention || !listed || listed.query !== this.mention.query) return [];
    return listed.items.map((item) => ({ label: item.path, kind: item.kind }));
  }

  private renderMentions(state: ViewState): void {
    const items = this.currentChoices(state);
    this.mentionList.textContent = '';
    this.mentionList.hidden = items.length === 0;
    this.mentionList.setAttribute('aria-label', this.command ? 'Commands' : 'Workspace files');
    if (this.mentionIndex >= items.length) this.mentionIndex = 0;
    items.forEach((item, index) => {
      const option = h('div', {
        class: `mention${index === this.mentionIndex ? ' selected' : ''} kind-${item.kind}`,
        text: item.label,
        attrs: { role: 'option', 'aria-selected': String(index === this.mentionIndex) },
      });
      if (item.detail) {
        option.append(h('span', { class: 'choice-detail', text: ` ${item.detail}` }));
        option.title = item.detail;
      }
      option.addEventListener('mousedown', (e) => {
        e.preventDefault();
        this.acceptMention(index);
      });
      this.mentionList.append(option);
    });
  }

  /** Arrow keys, Enter/Tab and Escape while completions show; true when the key was used. */
  private mentionKey(e: KeyboardEvent): boolean {
    const state = this.state;
    const items = state ? this.currentChoices(state) : [];
    if (items.length === 0 || this.mentionList.hidden) return false;
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      this.mentionIndex = (this.mentionIndex + (e.key === 'ArrowDown' ? 1 : items.length - 1)) % items.length;
      if (state) this.renderMentions(state);
    } else if ((e.key === 'Enter' && !e.shiftKey) || e.key === 'Tab') {
      this.acceptMention(this.mentionIndex);
    } else if (e.key === 'Escape') {
      this.closeMentions();
    } else {
      return false;
    }
    e.preventDefault();
    e.stopPropagation();
    return true;
  }

  private acceptMention(index: number): void {
    const state = this.state;
    if (!state) return;
    let applied: { text: string; caret: number } | undefined;
    if (this.command) {
      const choice = commandChoices(state.commands ?? [], this.command.query)[index];
      if (choice) applied = applyCommand(this.input.value, this.command, choice.name);
    } else {
      const item = this.mention && state.mentions?.query === this.mention.query ? state.mentions.items[index] : undefined;
      if (item && this.mention) applied = applyMention(this.input.value, this.mention, item);
    }
    if (!applied) return;
    this.input.value = applied.text;
    this.input.setSelectionRange(applied.caret, applied.caret);
    this.input.focus();
    this.input.dispatchEvent(new Event('input', { bubbles: true }));
  }

  /** Text at the caret (a space before it unless at the start of a word boundary). */
  private insertText(text: string): void {
    const input = this.input;
    const at = input.selectionStart ?? input.value.length;
    const before = input.value.slice(0, at);
    const lead = before && !/\s$/.test(before) ? ' ' : '';
    input.value = before + lead + text + input.value.slice(input.selectionEnd ?? at);
    const caret = at + lead.length + text.length;
    input.setSelectionRange(caret, caret);
    input.focus();
    input.dispatchEvent(new Event('input', { bubbles: true }));
  }

  private addImages(files: File[]): void {
    for (const file of files) {
      const problem = imageProblem(file.type, file.size, this.images.length);
      if (problem) {
        this.note.textContent = literal(`${file.name || 'Pasted file'}: ${problem}`);
        continue;
      }
      const reader = new FileReader();
      reader.addEventListener('load', () => {
        const image = typeof reader.result === 'string' ? imageFromDataUrl(reader.result) : undefined;
        if (image && imageProblem(image.mimeType, 0, this.images.length) === undefined) this.setImages([...this.images, image]);
      });
      reader.readAsDataURL(file);
    }
  }

  private setImages(images: ImageContent[]): void {
    this.images = images;
    this.imageStrip.textContent = '';
    this.imageStrip.hidden = images.length === 0;
    if (images.length === 0) this.note.textContent = '';
    images.forEach((image, index) => {
      const remove = button('×', () => this.setImages(this.images.filter((_, i) => i !== index)), 'link remove-image', 'Remove this image');
      this.imageStrip.append(h('div', { class: 'pending-image' }, imageElement(image), remove));
    });
  }
}
