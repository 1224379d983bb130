/**
 * The chat view, rendered from `ViewState`: the head (toolbar, meter, MCP servers, banner),
 * the plan and pins, the transcript, the rewind panel and the prompt box. Each part is its own module, by what it
 * shows; this one lays them out and routes the state and the keys they share (Esc stops a
 * running turn wherever the focus is, unless a card or panel takes it first).
 */
import type { ViewState } from '../state/reducer';
import { h, type Post } from './dom';
import { Composer } from './composerView';
import { MEMORY_OPEN_DEFAULT, memoryOpen, renderMemory, type MemoryOpen } from './memory';
import { RewindPanel } from './rewindPanel';
import { ContextMeter, renderBanner, renderMcp } from './status';
import { Toolbar } from './toolbar';
import { Transcript } from './transcript';

export class ChatView {
  private readonly toolbar: Toolbar;
  private readonly meter = new ContextMeter();
  private readonly mcp: HTMLElement;
  private readonly memory: HTMLElement;
  private readonly banner: HTMLElement;
  private readonly transcript: Transcript;
  private readonly rewind: RewindPanel;
  private readonly composer: Composer;
  private state: ViewState | undefined;

  constructor(
    root: HTMLElement,
    private readonly post: Post,
    draft = '',
    private opened: MemoryOpen = MEMORY_OPEN_DEFAULT,
  ) {
    this.toolbar = new Toolbar(post);
    this.mcp = h('div', { class: 'mcp', attrs: { 'aria-label': 'MCP servers' } });
    this.memory = h('div', { class: 'memory' });
    this.banner = h('div', { class: 'banner', attrs: { role: 'alert' } });
    this.composer = new Composer(post, draft);
    this.transcript = new Transcript(post, {
      rewind: (entryId) => post({ type: 'rewindPreview', entryId }),
      resend: (text, images) => this.composer.restore(text, images),
      typing: () => this.composer.typing,
    });
    this.rewind = new RewindPanel(post);
    root.append(
      ...this.toolbar.rows,
      this.toolbar.compactPanel,
      this.meter.el,
      // What the tools run with, on one line: the sandbox, then the MCP servers.
      h('div', { class: 'tools-line' }, this.toolbar.sandbox, this.mcp),
      this.memory,
      this.banner,
      this.transcript.el,
      this.rewind.el,
      this.composer.el,
    );
    root.ownerDocument.addEventListener('keydown', (e) => {
      if (e.key !== 'Escape' || e.defaultPrevented || this.state?.turn.status !== 'running') return;
      e.preventDefault();
      this.post({ type: 'stop' });
    });
  }

  /** Whether the plan and the pins are open now (what a reload of the view restores). */
  get memoryOpen(): MemoryOpen {
    this.opened = memoryOpen(this.memory, this.opened);
    return this.opened;
  }

  get draft(): string {
    return this.composer.draft;
  }

  focusInput(): void {
    this.composer.focus();
  }

  insertText(text: string): void {
    this.composer.insert(text);
  }

  render(state: ViewState): void {
    const previous = this.state;
    this.state = state;
    this.toolbar.render(state);
    if (!previous || previous.usage !== state.usage) this.meter.render(state);
    if (!previous || previous.mcp !== state.mcp || previous.server !== state.server) renderMcp(this.mcp, state, this.post);
    if (!previous || previous.plan !== state.plan || previous.pins !== state.pins) renderMemory(this.memory, state, this.post, this.opened);
    renderBanner(this.banner, state, this.post);
    this.rewind.render(state);
    if (state.draft && state.draft.seq !== previous?.draft?.seq) {
      this.composer.restore(state.draft.text, state.draft.images);
      this.post({ type: 'draftTaken', seq: state.draft.seq });
    }
    this.composer.render(state);
    this.transcript.render(state);
  }
}
