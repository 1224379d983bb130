/**
 * The transcript: items keyed by id; an item whose object did not change (the reducer keeps
 * identity) is not touched, so streaming re-renders only the message that grows. Older
 * history loads when the top comes into view; the reader's place is kept; new output scrolls
 * into view when the reader was at the bottom. A new permission card takes the keyboard
 * focus, unless the user may be typing in the prompt box (see `Composer.typing`).
 */
import { streamingItemId, type Item, type ViewState } from '../state/reducer';
import { button, h, Toggles, type Post } from './dom';
import { renderBranch, renderCompaction, renderFileRestore, renderModelChange, renderNotice, renderOverflow } from './markers';
import { renderAssistant, renderUser, type MessageActions } from './messageItems';
import { renderPermission } from './permission';
import { renderToolCall } from './toolCall';

interface Rendered {
  item: Item;
  el: HTMLElement;
  /** What else the rendering depended on (turn state: rewind buttons, streaming cursor). */
  key: string;
}

export interface TranscriptHooks {
  rewind(entryId: string): void;
  resend: MessageActions['resend'];
  /** Whether the user may be typing in the prompt box (a new card does not take the focus
   * then: a key meant for the box must not answer the card). */
  typing(): boolean;
}

export class Transcript {
  readonly el: HTMLElement;
  private readonly older: HTMLElement;
  private readonly empty: HTMLElement;
  private readonly toggles = new Toggles();
  private rendered = new Map<string, Rendered>();
  /** The cursor last asked for, so that one position asks once. */
  private requestedOlder: string | undefined;
  private readonly focused = new Set<string>();
  private state: ViewState | undefined;

  constructor(
    private readonly post: Post,
    private readonly hooks: TranscriptHooks,
  ) {
    this.el = h('div', { class: 'transcript', attrs: { role: 'log', 'aria-live': 'polite' } });
    this.older = h('div', { class: 'older' });
    this.el.append(this.older);
    this.el.addEventListener('scroll', () => this.maybeLoadOlder());
    this.empty = h('div', { class: 'empty', text: 'Ask the agent something about this workspace.' });
  }

  render(state: ViewState): void {
    this.state = state;
    const container = this.el;
    const nearBottom = container.scrollHeight - container.scrollTop - container.clientHeight < 80;
    const fromBottom = container.scrollHeight - container.scrollTop;
    const firstBefore = this.older.nextElementSibling as HTMLElement | null;
    this.renderOlder(state);
    const next = new Map<string, Rendered>();
    const streamingId = streamingItemId(state);
    const idle = state.turn.status === 'idle';
    let cursor: ChildNode | null = this.older.nextSibling;
    if (state.items.length === 0) {
      if (this.empty.parentNode !== container) container.insertBefore(this.empty, cursor);
      cursor = this.empty.nextSibling;
    } else if (this.empty.parentNode === container) {
      this.empty.remove();
      cursor = this.older.nextSibling;
    }
    let newCard: HTMLElement | undefined;
    for (const item of state.items) {
      const streaming = item.id === streamingId;
      const key = `${idle ? 'idle' : 'busy'}${streaming ? ':s' : ''}`;
      const old = this.rendered.get(item.id);
      let entry: Rendered;
      if (old && old.item === item && old.key === key) {
        entry = old;
      } else {
        const el = this.renderItem(item, idle, streaming);
        if (old) {
          if (old.el === cursor) cursor = old.el.nextSibling;
          old.el.remove();
        }
        entry = { item, el, key };
        if (item.kind === 'permission' && item.status === 'pending' && !this.focused.has(item.id)) {
          this.focused.add(item.id);
          newCard = el;
        }
      }
      next.set(item.id, entry);
      if (entry.el !== cursor) container.insertBefore(entry.el, cursor);
      cursor = entry.el.nextSibling;
    }
    for (const [id, old] of this.rendered) if (!next.has(id)) old.el.remove();
    this.rendered = next;
    const prepended = firstBefore !== null && firstBefore.isConnected && this.older.nextElementSibling !== firstBefore;
    if (prepended && !nearBottom) {
      // Older history arrived above: what the user was reading stays where it was.
      container.scrollTop = container.scrollHeight - fromBottom;
    } else if (nearBottom || newCard) {
      container.scrollTop = container.scrollHeight;
    }
    if (newCard && !this.hooks.typing()) newCard.focus({ preventScroll: true });
    this.maybeLoadOlder();
  }

  /** The first pending permission card, for the keyboard. */
  focusPendingCard(): boolean {
    const card = this.el.querySelector<HTMLElement>('.card.permission.status-pending');
    card?.focus();
    return card !== null;
  }

  private renderItem(item: Item, idle: boolean, streaming: boolean): HTMLElement {
    const actions: MessageActions = {
      post: this.post,
      toggles: this.toggles,
      idle,
      rewind: (entryId) => this.hooks.rewind(entryId),
      resend: (text, images) => this.hooks.resend(text, images),
    };
    let el: HTMLElement;
    switch (item.kind) {
      case 'user':
        el = renderUser(item, actions);
        break;
      case 'assistant':
        el = renderAssistant(item, actions, streaming);
        break;
      case 'toolCall':
        el = renderToolCall(item, this.post, this.toggles);
        break;
      case 'compaction':
        el = renderCompaction(item, this.post, this.toggles);
        break;
      case 'overflow':
        el = renderOverflow(item, this.toggles);
        break;
      case 'notice':
        el = renderNotice(item, this.toggles);
        break;
      case 'permission':
        el = renderPermission(item, this.post);
        break;
      case 'branch':
        el = renderBranch(item);
        break;
      case 'modelChange':
        el = renderModelChange(item);
        break;
      case 'fileRestore':
        el = renderFileRestore(item, this.post);
        break;
    }
    el.dataset['id'] = item.id;
    return el;
  }

  private renderOlder(state: ViewState): void {
    const { cursor, loading } = state.older;
    this.older.textContent = '';
    this.older.hidden = !cursor;
    if (!cursor) return;
    if (loading) {
      this.older.append(h('span', { class: 'meta', text: 'Loading earlier messages…' }));
    } else {
      this.older.append(
        button('Load earlier messages', () => {
          this.requestedOlder = undefined;
          this.post({ type: 'loadOlder' });
        }, 'link'),
      );
    }
  }

  /** Asks for the page before the first item when the top is in view (a short transcript
   * fills the view that way too). Once per cursor: a failed page waits for the button. */
  private maybeLoadOlder(): void {
    const state = this.state;
    if (!state?.older.cursor || state.older.loading || this.requestedOlder === state.older.cursor) return;
    if (this.el.scrollTop > 48) return;
    this.requestedOlder = state.older.cursor;
    this.post({ type: 'loadOlder' });
  }
}
