/**
 * The chat view's DOM, rendered from `ViewState`. Items are keyed by id; an item whose object
 * did not change (the reducer keeps identity) is not touched, so streaming re-renders only the
 * message that grows. Open/closed state of collapsible parts survives re-renders.
 */
import { formatTokens, meterFor } from '../state/meter';
import {
  rewindTarget,
  type AssistantItem,
  type BranchItem,
  type CompactionItem,
  type FileRestoreItem,
  type Item,
  type ModelChangeItem,
  type NoticeItem,
  type OverflowItem,
  type PermissionItem,
  type ToolCallItem,
  type UserItem,
  type ViewState,
} from '../state/reducer';
import type {
  ImageContent,
  ModelChoice,
  PermissionMode,
  PromptAttachment,
  RestoreChoice,
  RewindPreviewResult,
  SessionSummary,
  ToolCallContent,
} from '../protocol/types';
import type { WebviewToHost } from '../view/messages';
import { applyMention, imageFromDataUrl, imageProblem, imageSrc, mentionAt, mentionsFromUris, type MentionToken } from './composer';
import { literal } from './literal';
import { renderMarkdown } from './markdown';

type Post = (message: WebviewToHost) => void;

interface Rendered {
  item: Item;
  el: HTMLElement;
  /** Whether the rendering depended on turn state (rewind buttons, streaming cursor). */
  turnKey: string;
}

function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: { class?: string; text?: string; title?: string; attrs?: Record<string, string> } = {},
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

function button(label: string, onClick: () => void, cls = '', title?: string): HTMLButtonElement {
  const b = h('button', { class: cls, text: label, title, attrs: { type: 'button' } });
  b.addEventListener('click', (e) => {
    e.preventDefault();
    onClick();
  });
  return b;
}

export class ChatView {
  private readonly root: HTMLElement;
  private readonly sessionSelect: HTMLSelectElement;
  private readonly newButton: HTMLButtonElement;
  private readonly compactButton: HTMLButtonElement;
  private readonly compactPanel: HTMLElement;
  private readonly compactInput: HTMLInputElement;
  private readonly compactStatus: HTMLElement;
  /** The user asked for a compaction from the panel and waits for its outcome there. */
  private compactAsked = false;
  private readonly meterEl: HTMLElement;
  private readonly meterFill: HTMLElement;
  private readonly meterTick: HTMLElement;
  private readonly meterText: HTMLElement;
  private readonly banner: HTMLElement;
  private readonly mcpEl: HTMLElement;
  private readonly memoryEl: HTMLElement;
  private readonly transcript: HTMLElement;
  /** At the top of the transcript: earlier history is being loaded, or can be. */
  private readonly older: HTMLElement;
  /** The cursor last asked for, so that one position asks once. */
  private requestedOlder: string | undefined;
  private readonly empty: HTMLElement;
  private readonly input: HTMLTextAreaElement;
  private readonly sendButton: HTMLButtonElement;
  private readonly stopButton: HTMLButtonElement;
  private readonly status: HTMLElement;
  private readonly modelSelect: HTMLSelectElement;
  private readonly modeSelect: HTMLSelectElement;
  /** How the session's commands run (the sandbox, which follows the mode under `auto`). */
  private readonly sandboxState: HTMLElement;
  /** Completions for the @-mention at the caret. */
  private readonly mentionList: HTMLElement;
  private mention: MentionToken | undefined;
  private mentionIndex = 0;
  /** Images pasted or dropped, sent with the next prompt. */
  private readonly imageStrip: HTMLElement;
  private images: ImageContent[] = [];
  private readonly composerNote: HTMLElement;
  /** "Rewind here": the choices and what would change, until confirmed or cancelled. */
  private readonly rewindPanel: HTMLElement;
  private rewindChoice: RestoreChoice = 'conversation';
  private rewindShown: unknown;
  private rendered = new Map<string, Rendered>();
  /** Ids of collapsible parts the user opened (or closed, for ones open by default). */
  private readonly toggled = new Set<string>();
  private state: ViewState | undefined;

  constructor(root: HTMLElement, private readonly post: Post, draft = '') {
    this.root = root;
    this.sessionSelect = h('select', { class: 'session-select', title: 'Sessions in this workspace' });
    this.sessionSelect.addEventListener('change', () => {
      const id = this.sessionSelect.value;
      if (id && id !== this.state?.sessionId) this.post({ type: 'loadSession', sessionId: id });
    });
    this.sessionSelect.addEventListener('focus', () => this.post({ type: 'refreshSessions' }));
    this.newButton = button('New', () => this.post({ type: 'newSession' }), 'secondary', 'Start a new session');
    this.compactButton = button(
      'Compact now',
      () => {
        this.compactPanel.hidden = !this.compactPanel.hidden;
        if (!this.compactPanel.hidden) this.compactInput.focus();
      },
      'secondary',
      'Summarise the history now, optionally with instructions for the summary',
    );
    this.compactInput = h('input', {
      class: 'compact-instructions',
      attrs: { type: 'text', placeholder: 'Optional: what the summary should keep', 'aria-label': 'Compaction instructions' },
    });
    this.compactStatus = h('div', { class: 'compact-status', attrs: { role: 'status' } });
    const runCompact = (): void => {
      const instructions = this.compactInput.value.trim();
      this.post(instructions ? { type: 'compact', instructions } : { type: 'compact' });
      // The panel stays open, with the instructions, until the outcome is known: a
      // compaction that had nothing to do says so here, and nothing typed is lost.
      this.compactAsked = true;
      this.compactStatus.textContent = 'Compacting…';
    };
    this.compactInput.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') {
        e.preventDefault();
        runCompact();
      } else if (e.key === 'Escape') {
        this.compactPanel.hidden = true;
      }
    });
    this.compactPanel = h(
      'div',
      { class: 'compact-panel' },
      this.compactInput,
      button('Compact', runCompact, 'primary compact-go'),
      button('Cancel', () => (this.compactPanel.hidden = true), 'secondary'),
      this.compactStatus,
    );
    this.compactPanel.hidden = true;

    this.meterFill = h('div', { class: 'meter-fill' });
    this.meterTick = h('div', { class: 'meter-tick', title: 'Compaction threshold' });
    this.meterText = h('div', { class: 'meter-text' });
    this.meterEl = h(
      'div',
      { class: 'meter', attrs: { role: 'meter', 'aria-label': 'Context window usage', 'aria-valuemin': '0', 'aria-valuemax': '100' } },
      h('div', { class: 'meter-bar' }, this.meterFill, this.meterTick),
      this.meterText,
    );
    this.banner = h('div', { class: 'banner', attrs: { role: 'alert' } });
    this.mcpEl = h('div', { class: 'mcp', attrs: { 'aria-label': 'MCP servers' } });
    this.memoryEl = h('div', { class: 'memory' });
    this.transcript = h('div', { class: 'transcript', attrs: { role: 'log', 'aria-live': 'polite' } });
    this.older = h('div', { class: 'older' });
    this.transcript.append(this.older);
    // Scrolled to the top: the page before the first item.
    this.transcript.addEventListener('scroll', () => this.maybeLoadOlder());
    this.empty = h('div', { class: 'empty', text: 'Ask the agent something about this workspace.' });
    this.input = h('textarea', {
      class: 'prompt',
      attrs: { rows: '3', placeholder: 'Ask the agent… (Enter to send, Shift+Enter for a new line)', 'aria-label': 'Prompt' },
    });
    this.input.value = draft;
    this.input.addEventListener('keydown', (e) => {
      if (this.mentionKey(e)) return;
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        this.submit();
      }
    });
    this.sendButton = button('Send', () => this.submit(), 'primary send');
    this.stopButton = button('Stop', () => this.post({ type: 'stop' }), 'danger stop');
    this.status = h('div', { class: 'turn-status' });

    this.modelSelect = h('select', { class: 'model-select', attrs: { 'aria-label': 'Model' } });
    this.modelSelect.addEventListener('focus', () => this.post({ type: 'listModels' }));
    this.modelSelect.addEventListener('change', () => {
      const model = this.modelSelect.value;
      if (model && model !== this.state?.model?.id) this.post({ type: 'setModel', model });
    });
    this.modeSelect = h('select', { class: 'mode-select', attrs: { 'aria-label': 'Permission mode' } });
    this.modeSelect.append(h('option', { text: 'Mode', attrs: { value: '', disabled: '', hidden: '' } }));
    for (const [mode, label, title] of MODES) this.modeSelect.append(h('option', { text: label, title, attrs: { value: mode } }));
    this.modeSelect.addEventListener('change', () => this.post({ type: 'setMode', mode: this.modeSelect.value as PermissionMode }));
    this.sandboxState = h('span', { class: 'sandbox-state meta' });
    this.sandboxState.hidden = true;

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
    this.composerNote = h('div', { class: 'composer-note meta', attrs: { role: 'status' } });
    this.rewindPanel = h('div', { class: 'rewind-panel', attrs: { role: 'dialog', 'aria-label': 'Rewind' } });
    this.rewindPanel.hidden = true;
    const composer = h(
      'div',
      { class: 'composer' },
      this.mentionList,
      this.imageStrip,
      this.input,
      this.composerNote,
      h('div', { class: 'composer-actions' }, this.status, this.stopButton, this.sendButton),
    );
    composer.addEventListener('dragover', (e) => {
      const types = e.dataTransfer?.types ?? [];
      if (types.includes('Files') || types.includes('text/uri-list')) {
        e.preventDefault();
        composer.classList.add('dropping');
      }
    });
    composer.addEventListener('dragleave', () => composer.classList.remove('dropping'));
    composer.addEventListener('drop', (e) => {
      composer.classList.remove('dropping');
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

    root.append(
      h('div', { class: 'toolbar' }, this.sessionSelect, this.newButton, this.compactButton),
      h('div', { class: 'toolbar session-bar' }, this.modelSelect, this.modeSelect, this.sandboxState),
      this.compactPanel,
      this.meterEl,
      this.mcpEl,
      this.memoryEl,
      this.banner,
      this.transcript,
      this.rewindPanel,
      composer,
    );
  }

  get draft(): string {
    return this.input.value;
  }

  focusInput(): void {
    this.input.focus();
  }

  private submit(): void {
    const text = this.input.value.trim();
    if (!text && this.images.length === 0) return;
    if (!this.state || this.state.turn.status !== 'idle' || this.state.server.status !== 'running') return;
    this.post(this.images.length ? { type: 'send', text, images: this.images } : { type: 'send', text });
    this.input.value = '';
    this.setImages([]);
    this.closeMentions();
    // The saved draft follows the box (it is saved on `input`): a reload must not bring the
    // sent prompt back.
    this.input.dispatchEvent(new Event('input', { bubbles: true }));
  }

  /** Puts a prompt back in the box, to edit and send again. */
  private restore(text: string, images: readonly ImageContent[] = []): void {
    this.input.value = text;
    this.setImages([...images]);
    this.input.dispatchEvent(new Event('input', { bubbles: true }));
    this.input.focus();
  }

  render(state: ViewState): void {
    const previous = this.state;
    this.state = state;
    if (!previous || previous.sessions !== state.sessions || previous.sessionId !== state.sessionId || previous.title !== state.title) {
      this.renderSessions(state);
    }
    if (!previous || previous.usage !== state.usage) this.renderMeter(state);
    if (!previous || previous.mcp !== state.mcp || previous.server !== state.server) this.renderMcp(state);
    if (!previous || previous.plan !== state.plan || previous.pins !== state.pins) this.renderMemory(state);
    this.renderBanner(state);
    this.renderControls(state);
    if (!previous || previous.models !== state.models || previous.model !== state.model) this.renderModels(state);
    // Before a session the mode is the setting's (permissions.mode), which the view does not
    // know: nothing is shown as picked until the user picks or a session says.
    this.modeSelect.value = state.mode ?? '';
    this.renderSandbox(state);
    this.renderMentions(state);
    this.renderRewind(state);
    if (state.draft && state.draft.seq !== previous?.draft?.seq) {
      this.restore(state.draft.text, state.draft.images);
      this.post({ type: 'draftTaken', seq: state.draft.seq });
    }
    this.renderTranscript(state);
  }

  // ---- model, mode -----------------------------------------------------------------------

  private renderModels(state: ViewState): void {
    const select = this.modelSelect;
    select.textContent = '';
    const current = state.model;
    if (current && !state.models.some((m) => m.id === current.id)) {
      select.append(h('option', { text: `${current.name} · ${formatTokens(current.contextWindow)}`, attrs: { value: current.id } }));
    }
    for (const m of state.models) select.append(h('option', { text: modelLabel(m), title: modelDetail(m), attrs: { value: m.id } }));
    if (!current && state.models.length === 0) select.append(h('option', { text: 'Model', attrs: { value: '' } }));
    select.value = current?.id ?? '';
    select.title = current ? `Model: ${current.name}. Switching keeps the session; the transcript says what it costs.` : 'Model';
  }

  private renderSandbox(state: ViewState): void {
    const sandbox = state.sandbox;
    const el = this.sandboxState;
    el.hidden = !sandbox;
    if (!sandbox) return;
    el.textContent = literal(
      sandbox.sandboxed ? (sandbox.network ? 'Sandboxed' : 'Sandboxed, no network') : sandbox.reason ? 'No sandbox ⚠' : 'No sandbox',
    );
    el.dataset['sandboxed'] = String(sandbox.sandboxed);
    el.classList.toggle('warning', Boolean(sandbox.reason));
    el.title = literal(
      sandbox.sandboxed
        ? `Commands run in a sandbox: writes only inside the workspace${sandbox.network ? '' : ', no network'}.`
        : sandbox.reason
          ? `Commands run without a sandbox: ${sandbox.reason}.`
          : 'Commands run without a sandbox (they ask first in this mode).',
    );
  }

  // ---- composer: mentions and images -----------------------------------------------------

  private updateMention(): void {
    const token = mentionAt(this.input.value, this.input.selectionStart ?? this.input.value.length);
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
    this.mentionList.hidden = true;
    this.mentionList.textContent = '';
  }

  /** The completions listed for the query at the caret (an older answer is not shown). */
  private currentMentions(state: ViewState): MentionItemList {
    const listed = state.mentions;
    if (!this.mention || !listed || listed.query !== this.mention.query) return [];
    return listed.items;
  }

  private renderMentions(state: ViewState): void {
    const items = this.currentMentions(state);
    this.mentionList.textContent = '';
    this.mentionList.hidden = items.length === 0;
    if (this.mentionIndex >= items.length) this.mentionIndex = 0;
    items.forEach((item, index) => {
      const option = h('div', {
        class: `mention${index === this.mentionIndex ? ' selected' : ''} kind-${item.kind}`,
        text: item.path,
        attrs: { role: 'option', 'aria-selected': String(index === this.mentionIndex) },
      });
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
    const items = state ? this.currentMentions(state) : [];
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
    return true;
  }

  private acceptMention(index: number): void {
    const item = this.state ? this.currentMentions(this.state)[index] : undefined;
    if (!item || !this.mention) return;
    const { text, caret } = applyMention(this.input.value, this.mention, item);
    this.input.value = text;
    this.input.setSelectionRange(caret, caret);
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
        this.composerNote.textContent = literal(`${file.name || 'Pasted file'}: ${problem}`);
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
    if (images.length === 0) this.composerNote.textContent = '';
    images.forEach((image, index) => {
      const remove = button('×', () => this.setImages(this.images.filter((_, i) => i !== index)), 'link remove-image', 'Remove this image');
      this.imageStrip.append(h('div', { class: 'pending-image' }, imageElement(image), remove));
    });
  }

  // ---- rewind ----------------------------------------------------------------------------

  private renderRewind(state: ViewState): void {
    const rewind = state.rewind;
    if (rewind === this.rewindShown) return;
    this.rewindShown = rewind;
    const panel = this.rewindPanel;
    panel.textContent = '';
    panel.hidden = !rewind;
    if (!rewind) return;
    const preview = rewind.preview;
    const prompt = Boolean(preview?.prompt);
    panel.append(
      h('div', { class: 'card-title', text: prompt ? 'Rewind to before this prompt' : 'Rewind to after this answer' }),
    );
    if (!preview) {
      panel.append(h('div', { class: 'meta', text: 'Checking which files would change…' }), button('Cancel', () => this.post({ type: 'rewindCancel' }), 'secondary'));
      return;
    }
    const hasFiles = preview.files.length > 0;
    if (!hasFiles && this.rewindChoice !== 'conversation') this.rewindChoice = 'conversation';
    const choices = h('div', { class: 'rewind-choices', attrs: { role: 'radiogroup' } });
    for (const [choice, label] of RESTORE_CHOICES) {
      const input = h('input', { attrs: { type: 'radio', name: 'rewind-choice', value: choice } });
      input.checked = this.rewindChoice === choice;
      input.disabled = choice !== 'conversation' && !hasFiles;
      input.addEventListener('change', () => (this.rewindChoice = choice));
      choices.append(h('label', { class: `choice choice-${choice}` }, input, h('span', { text: label })));
    }
    panel.append(choices, rewindFiles(preview));
    panel.append(
      h(
        'div',
        { class: 'card-actions' },
        button(
          'Rewind',
          () => this.post({ type: 'rewind', entryId: rewind.entryId, restore: this.rewindChoice }),
          'primary rewind-go',
        ),
        button('Cancel', () => this.post({ type: 'rewindCancel' }), 'secondary rewind-cancel'),
      ),
    );
    for (const b of panel.querySelectorAll('button')) b.disabled = rewind.busy;
  }

  // ---- toolbar and meter -----------------------------------------------------------------

  private renderSessions(state: ViewState): void {
    const select = this.sessionSelect;
    select.textContent = '';
    const listed = state.sessions.some((s) => s.sessionId === state.sessionId);
    if (!state.sessionId) select.appendChild(h('option', { text: 'New session', attrs: { value: '' } }));
    else if (!listed) select.appendChild(h('option', { text: state.title || 'New session', attrs: { value: state.sessionId } }));
    for (const s of state.sessions) {
      select.appendChild(h('option', { text: sessionLabel(s), title: sessionDetail(s), attrs: { value: s.sessionId } }));
    }
    select.value = state.sessionId ?? '';
  }

  private renderMeter(state: ViewState): void {
    const meter = meterFor(state.usage);
    if (!meter) {
      this.meterEl.dataset['level'] = 'none';
      this.meterFill.style.width = '0%';
      this.meterTick.hidden = true;
      this.meterText.textContent = 'Context: no usage yet';
      this.meterEl.title = '';
      return;
    }
    this.meterEl.dataset['level'] = meter.level;
    this.meterEl.setAttribute('aria-valuenow', String(Math.min(100, meter.percent)));
    this.meterFill.style.width = `${Math.min(100, meter.percent)}%`;
    this.meterTick.hidden = false;
    this.meterTick.style.left = `${Math.min(100, meter.compactAtPercent)}%`;
    this.meterText.textContent = '';
    this.meterText.append(
      h('span', { class: 'meter-label', text: meter.label }),
      h('span', { class: 'meter-sep', text: ' · ' }),
      h('span', { class: 'meter-cache', text: meter.cacheLabel }),
      h('span', { class: 'meter-sep', text: ' · ' }),
      h('span', { class: 'meter-cost', text: meter.costLabel }),
      h('span', { class: 'meter-sep', text: ' · ' }),
      h('span', { class: 'meter-window', text: `window ${meter.windowNumber}` }),
    );
    this.meterEl.dataset['pastThreshold'] = String(meter.pastThreshold);
    if (meter.pastThreshold) {
      this.meterText.append(h('span', { class: 'meter-next', text: ' · compacts before the next request' }));
    }
    this.meterEl.title = meter.detail;
  }

  /** One line per MCP server (a failed one opens to its error and stderr), and the waiting
   * change of the tool list with its price and an Accept button. Text only, never markup. */
  /** The task's plan as a checklist and the pins in force, each text as written (never
   * markup): what the server carries verbatim across every compaction. */
  private renderMemory(state: ViewState): void {
    const el = this.memoryEl;
    el.textContent = '';
    el.hidden = state.plan.length === 0 && state.pins.length === 0;
    if (state.plan.length > 0) {
      const done = state.plan.filter((e) => e.status === 'completed').length;
      const list = h('ul', { class: 'plan-steps', attrs: { 'aria-label': 'Plan' } });
      for (const entry of state.plan) {
        const mark = entry.status === 'completed' ? '☑' : entry.status === 'in_progress' ? '▶' : '☐';
        const step = h('li', { class: `plan-step ${entry.status}`, title: `${entry.status}, ${entry.priority} priority` });
        step.append(h('span', { class: 'plan-mark', text: `${mark} ` }), h('span', { class: 'plan-text', text: entry.content }));
        list.append(step);
      }
      el.append(h('details', { class: 'plan', attrs: { open: '' } }, h('summary', { text: `Plan · ${done} of ${state.plan.length} done` }), list));
    }
    if (state.pins.length > 0) {
      const list = h('ul', { class: 'pin-list', attrs: { 'aria-label': 'Pins' } });
      for (const pin of state.pins) {
        const item = h('li', { class: `pin ${pin.kind}`, title: `${pin.kind} ${pin.id}, pinned by the ${pin.by}` });
        const forget = button('×', () => this.post({ type: 'forgetPin', pinId: pin.id }), 'link pin-forget');
        forget.title = `Remove this ${pin.kind} (the agent is told it no longer holds)`;
        item.append(h('span', { class: 'pin-kind', text: `${pin.kind}: ` }), h('span', { class: 'pin-text', text: pin.text }), forget);
        list.append(item);
      }
      el.append(h('details', { class: 'pins' }, h('summary', { text: `Pinned · ${state.pins.length}` }), list));
    }
  }

  private renderMcp(state: ViewState): void {
    const el = this.mcpEl;
    el.textContent = '';
    const mcp = state.mcp;
    if (!mcp || mcp.servers.length === 0) {
      el.hidden = true;
      return;
    }
    el.hidden = false;
    const running = state.server.status === 'running';
    for (const server of mcp.servers) {
      const label = `${server.name} · ${mcpStateLabel(server.state)}` +
        (server.state === 'ready' ? ` · ${server.tools.length} tools` : '') +
        (server.trusted ? ' · trusted' : '');
      const title = `${server.transport}: ${server.target} (${server.source})`;
      if (server.state !== 'failed') {
        el.append(h('div', { class: `mcp-server ${server.state}`, text: label, title }));
        continue;
      }
      const details = h(
        'details',
        { class: 'mcp-server failed' },
        h('summary', { text: label, title }),
        h('div', { class: 'mcp-error', text: server.error ?? 'The server failed.' }),
      );
      if (server.stderrTail) details.append(h('pre', { class: 'mcp-stderr', text: server.stderrTail }));
      const restart = button('Restart', () => this.post({ type: 'restartMcp', name: server.name }), 'secondary');
      restart.disabled = !running;
      details.append(restart);
      el.append(details);
    }
    const change = mcp.toolsChange;
    if (change) {
      const parts = [
        change.added.length ? `added ${change.added.join(', ')}` : '',
        change.removed.length ? `removed ${change.removed.join(', ')}` : '',
        change.changed.length ? `changed ${change.changed.join(', ')}` : '',
      ].filter(Boolean);
      const accept = button('Accept', () => this.post({ type: 'acceptTools' }), 'primary');
      accept.disabled = !running;
      el.append(
        h(
          'div',
          { class: 'mcp-change', attrs: { role: 'status' } },
          h('div', {
            class: 'mcp-change-text',
            text:
              `MCP tools changed (${parts.join('; ') || 'reordered'}). The model keeps the current list until you ` +
              `accept: the next request then re-reads about ${formatTokens(change.tokens)} tokens without the ` +
              'cache. The next compaction takes the change in anyway.',
          }),
          accept,
        ),
      );
    }
  }

  private renderBanner(state: ViewState): void {
    const b = this.banner;
    b.textContent = '';
    b.className = 'banner';
    const { status, message } = state.server;
    if (status === 'failed' || status === 'stopped') {
      b.classList.add('error');
      b.append(
        h('div', { class: 'banner-text', text: message ?? 'The agent server is not running.' }),
        h(
          'div',
          { class: 'banner-actions' },
          button('Show log', () => this.post({ type: 'command', command: 'showOutput' }), 'secondary'),
          button('Settings', () => this.post({ type: 'command', command: 'openSettings' }), 'secondary'),
          button('Restart server', () => this.post({ type: 'command', command: 'restartServer' }), 'primary'),
        ),
      );
    } else if (status === 'starting') {
      b.classList.add('info');
      b.append(h('div', { class: 'banner-text', text: message ?? 'Starting the agent server…' }));
    } else if (state.problem) {
      b.classList.add('error', 'problem');
      b.append(
        h('div', { class: 'banner-text', text: state.problem }),
        h(
          'div',
          { class: 'banner-actions' },
          button('Set API Key', () => this.post({ type: 'command', command: 'setApiKey' }), 'primary'),
          button('Open Settings', () => this.post({ type: 'command', command: 'openSettings' }), 'secondary'),
          button('Show log', () => this.post({ type: 'command', command: 'showOutput' }), 'secondary'),
          button('Dismiss', () => this.post({ type: 'dismissProblem' }), 'secondary'),
        ),
      );
    } else if (!state.workspaceUri) {
      b.classList.add('info');
      b.append(h('div', { class: 'banner-text', text: 'Open a folder: agent sessions belong to a workspace folder.' }));
    }
    b.hidden = b.childElementCount === 0;
  }

  private renderControls(state: ViewState): void {
    const running = state.server.status === 'running';
    const busy = state.turn.status !== 'idle';
    this.sendButton.hidden = busy;
    this.stopButton.hidden = !busy;
    this.stopButton.disabled = state.turn.status === 'stopping';
    this.sendButton.disabled = !running || !state.workspaceUri;
    this.input.disabled = !running;
    this.newButton.disabled = !running || busy || !state.workspaceUri;
    this.sessionSelect.disabled = !running || busy;
    this.compactButton.disabled = !running || busy || !state.sessionId || state.compacting;
    this.compactButton.textContent = state.compacting ? 'Compacting…' : 'Compact now';
    this.status.textContent =
      state.turn.status === 'stopping'
        ? 'Stopping…'
        : state.compacting
          ? 'Compacting context…'
          : busy
            ? 'Working…'
            : '';
    if (this.compactAsked && !state.compacting && state.compactResult) {
      this.compactAsked = false;
      const result = state.compactResult;
      this.compactStatus.textContent = literal(result.message);
      this.compactStatus.dataset['outcome'] = result.outcome;
      if (result.outcome === 'compacted') {
        this.compactInput.value = '';
        this.compactPanel.hidden = true;
      } else {
        this.compactPanel.hidden = false;
      }
    }
  }

  // ---- transcript ------------------------------------------------------------------------

  private renderTranscript(state: ViewState): void {
    const container = this.transcript;
    const nearBottom = container.scrollHeight - container.scrollTop - container.clientHeight < 80;
    const fromBottom = container.scrollHeight - container.scrollTop;
    const firstBefore = this.older.nextElementSibling as HTMLElement | null;
    this.renderOlder(state);
    const next = new Map<string, Rendered>();
    const lastAssistant = findLast(state.items, (i) => i.kind === 'assistant');
    let cursor: ChildNode | null = this.older.nextSibling;
    if (state.items.length === 0) {
      if (this.empty.parentNode !== container) container.insertBefore(this.empty, cursor);
      cursor = this.empty.nextSibling;
    } else if (this.empty.parentNode === container) {
      this.empty.remove();
      cursor = this.older.nextSibling;
    }
    for (const item of state.items) {
      const streaming = state.turn.status !== 'idle' && item === lastAssistant;
      const turnKey = `${state.turn.status === 'idle' ? 'idle' : 'busy'}${streaming ? ':s' : ''}`;
      const old = this.rendered.get(item.id);
      let entry: Rendered;
      if (old && old.item === item && old.turnKey === turnKey) {
        entry = old;
      } else {
        const el = this.renderItem(item, state, streaming);
        if (old) {
          if (old.el === cursor) cursor = old.el.nextSibling;
          old.el.remove();
        }
        entry = { item, el, turnKey };
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
    } else if (nearBottom) {
      container.scrollTop = container.scrollHeight;
    }
    this.maybeLoadOlder();
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
    const container = this.transcript;
    if (!state?.older.cursor || state.older.loading || this.requestedOlder === state.older.cursor) return;
    if (container.scrollTop > 48) return;
    this.requestedOlder = state.older.cursor;
    this.post({ type: 'loadOlder' });
  }

  private renderItem(item: Item, state: ViewState, streaming: boolean): HTMLElement {
    let el: HTMLElement;
    switch (item.kind) {
      case 'user':
        el = this.renderUser(item, state);
        break;
      case 'assistant':
        el = this.renderAssistant(item, state, streaming);
        break;
      case 'toolCall':
        el = this.renderToolCall(item);
        break;
      case 'compaction':
        el = this.renderCompaction(item);
        break;
      case 'overflow':
        el = this.renderOverflow(item);
        break;
      case 'notice':
        el = this.renderNotice(item);
        break;
      case 'permission':
        el = this.renderPermission(item);
        break;
      case 'branch':
        el = this.renderBranch(item);
        break;
      case 'modelChange':
        el = renderModelChange(item);
        break;
      case 'fileRestore':
        el = renderFileRestore(item);
        break;
    }
    el.dataset['id'] = item.id;
    return el;
  }

  private rewindButton(item: Item, state: ViewState): HTMLElement | null {
    const entryId = rewindTarget(item);
    if (!entryId || state.turn.status !== 'idle') return null;
    const prompt = item.kind === 'user';
    return button(
      prompt ? '↶ Ask again from here' : '↶ Rewind here',
      () => {
        this.rewindChoice = 'conversation';
        this.post({ type: 'rewindPreview', entryId });
      },
      'link rewind',
      prompt
        ? 'Go back to just before this message, to ask differently; the files the agent changed since can go back too (nothing is deleted)'
        : 'Continue the conversation after this answer; the files the agent changed since can go back too (nothing is deleted)',
    );
  }

  private renderUser(item: UserItem, state: ViewState): HTMLElement {
    const body = h('div', { class: 'body plain', text: item.text });
    const images = item.images.length ? h('div', { class: 'user-images' }, ...item.images.map(imageElement)) : null;
    const attachments = item.attachments.length
      ? h('div', { class: 'attachments' }, ...item.attachments.map(attachmentChip))
      : null;
    const failed = item.failed
      ? h(
          'div',
          { class: 'not-sent' },
          h('span', { class: 'meta', text: 'Not sent.' }),
          button('Edit and send again', () => this.restore(item.text, item.images), 'link resend'),
        )
      : null;
    return h(
      'div',
      { class: `item user${item.pending ? ' pending' : ''}${item.failed ? ' failed' : ''}` },
      h('div', { class: 'role' }, h('span', { text: 'You' }), this.rewindButton(item, state)),
      attachments,
      body,
      images,
      failed,
    );
  }

  private renderAssistant(item: AssistantItem, state: ViewState, streaming: boolean): HTMLElement {
    const el = h('div', { class: `item assistant${streaming ? ' streaming' : ''}` });
    el.append(h('div', { class: 'role' }, h('span', { text: 'Agent' }), this.rewindButton(item, state)));
    if (item.thinking) {
      const thinking = this.collapsible(`${item.id}:thinking`, false, 'thinking', h('span', { text: 'Thinking' }));
      thinking.append(h('div', { class: 'body plain thinking-text', text: item.thinking }));
      el.append(thinking);
    }
    if (item.text) {
      const body = h('div', { class: 'body markdown' });
      body.innerHTML = renderMarkdown(item.text); // sanitised by DOMPurify
      el.append(body);
    }
    if (streaming) el.append(h('span', { class: 'cursor', text: '▍' }));
    if (item.error) el.append(h('div', { class: 'notice error', text: item.error }));
    return el;
  }

  private renderToolCall(item: ToolCallItem): HTMLElement {
    const denial = denialOf(item);
    const status = denial ? 'rejected' : item.status;
    const details = this.collapsible(
      item.id,
      false,
      `tool status-${status}`,
      h('span', { class: `tool-icon kind-${item.toolKind}`, text: toolIcon(item.toolKind) }),
      h('span', { class: 'tool-title', text: item.title, title: item.title }),
      h('span', { class: `tool-status status-${status}`, text: statusLabel(status) }),
    );
    const body = h('div', { class: 'tool-body' });
    if (denial) body.append(h('div', { class: 'denial', text: `Not run: ${denial}.` }));
    if (item.locations.length) {
      body.append(h('div', { class: 'meta', text: item.locations.map((l) => (l.line ? `${l.path}:${l.line}` : l.path)).join(', ') }));
    }
    const diffs = item.content.filter((c) => c.type === 'diff');
    const command = commandOf(item.toolKind, item.rawInput);
    if (command !== undefined) {
      body.append(h('div', { class: 'label', text: 'Command' }), h('pre', { class: 'code command', text: command }));
    } else if (item.rawInput !== undefined && diffs.length === 0) {
      body.append(h('div', { class: 'label', text: 'Input' }), h('pre', { class: 'code', text: json(item.rawInput) }));
    }
    if (item.content.length) {
      body.append(h('div', { class: 'label', text: diffs.length ? 'Change' : 'Result' }));
      for (const c of item.content) body.append(renderToolContent(c));
    } else if (item.rawOutput !== undefined && !denial) {
      body.append(h('div', { class: 'label', text: 'Output' }), h('pre', { class: 'code', text: json(item.rawOutput) }));
    }
    details.append(body);
    return details;
  }

  private renderCompaction(item: CompactionItem): HTMLElement {
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
        headline = `Compaction cancelled${reason}`;
        break;
    }
    const el = h(
      'div',
      { class: `marker compaction status-${item.status}`, attrs: { role: 'separator' } },
      h('div', { class: 'marker-line', text: headline, title: 'Everything above is summarised for the model; the full history stays in the session log.' }),
    );
    if (item.summary) {
      const details = this.collapsible(`${item.id}:summary`, false, 'summary', h('span', { text: 'Summary the model sees' }));
      const body = h('div', { class: 'body markdown' });
      body.innerHTML = renderMarkdown(item.summary); // sanitised by DOMPurify
      details.append(body);
      el.append(details);
    }
    return el;
  }

  private renderOverflow(item: OverflowItem): HTMLElement {
    const what = item.overflow === 'truncated' ? 'The reply was cut off by the context window' : 'The provider rejected the prompt as too long';
    const action =
      item.action === 'compacting' ? 'compacting and retrying once' : item.action === 'retrying' ? 'retrying' : 'gave up';
    return h(
      'div',
      { class: `notice overflow ${item.action === 'gaveUp' ? 'error' : 'warning'}` },
      h('strong', { text: `Context overflow: ${what}; ${action}.` }),
      h('div', { class: 'meta', text: item.message }),
    );
  }

  private renderNotice(item: NoticeItem): HTMLElement {
    return h('div', { class: `notice ${item.level}`, text: item.message });
  }

  private renderPermission(item: PermissionItem): HTMLElement {
    const card = h('div', { class: `card permission status-${item.status}` });
    const call = item.toolCall;
    card.append(
      h(
        'div',
        { class: 'card-title' },
        h('span', { class: `tool-icon kind-${call.toolKind}`, text: toolIcon(call.toolKind) }),
        h('span', { text: `Allow ${call.title}?` }),
      ),
    );
    // What the user approves, whole and readable: the command, the diff (a new file's
    // content), or the arguments.
    const diffs = (call.content ?? []).filter((c) => c.type === 'diff');
    const command = commandOf(call.toolKind, call.rawInput);
    if (diffs.length) for (const d of diffs) card.append(renderToolContent(d));
    else if (command !== undefined) card.append(h('pre', { class: 'code command', text: command }));
    else card.append(h('pre', { class: 'code', text: json(call.rawInput) }));
    if (item.status === 'pending') {
      const actions = h('div', { class: 'card-actions' });
      for (const option of item.options) {
        const cls = option.kind.startsWith('allow') ? 'primary' : 'secondary';
        actions.append(
          button(option.name, () => this.post({ type: 'permission', requestId: item.requestId, optionId: option.optionId }), `${cls} option-${option.kind}`),
        );
      }
      card.append(actions);
    } else {
      const chosen = item.options.find((o) => o.optionId === item.selected);
      card.append(
        h('div', { class: 'meta', text: item.status === 'cancelled' ? 'Cancelled.' : `Answered: ${chosen?.name ?? item.selected ?? ''}` }),
      );
    }
    return card;
  }

  private renderBranch(item: BranchItem): HTMLElement {
    return h(
      'div',
      { class: 'marker branch', attrs: { role: 'separator' } },
      h('div', { class: 'marker-line', text: 'Rewound: continued from an earlier message' }),
    );
  }

  private collapsible(key: string, openByDefault: boolean, cls: string, ...summary: Node[]): HTMLDetailsElement {
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

type MentionItemList = NonNullable<ViewState['mentions']>['items'];

const MODES: readonly [PermissionMode, string, string][] = [
  ['ask', 'Ask every time', 'Every tool call asks first, reads too'],
  ['allowReads', 'Allow reads', 'Reads and searches run; edits and commands ask first'],
  ['allowAll', 'Allow all', 'Every tool call runs without asking'],
];

const RESTORE_CHOICES: readonly [RestoreChoice, string][] = [
  ['conversation', 'Conversation only'],
  ['files', 'Files only'],
  ['both', 'Conversation and files'],
];

function modelLabel(m: ModelChoice): string {
  return `${m.name} · ${formatTokens(m.contextWindow)} · ${price(m.pricing.input)}/${price(m.pricing.output)}`;
}

function modelDetail(m: ModelChoice): string {
  return [
    `${m.vendor} ${m.id}${m.source === 'user' ? ' (your models file)' : ''}`,
    `Window ${formatTokens(m.contextWindow)} tokens, output up to ${formatTokens(m.maxOutput)}`,
    `Per million tokens: input ${price(m.pricing.input)}, output ${price(m.pricing.output)}, cached read ${price(m.pricing.cacheRead)}, cache write ${price(m.pricing.cacheWrite)}`,
    m.images ? 'Takes images' : 'Text only',
  ].join('\n');
}

function price(usdPerMillion: number): string {
  return `$${usdPerMillion < 1 ? usdPerMillion.toFixed(2) : String(Number(usdPerMillion.toFixed(2)))}`;
}

function imageElement(image: ImageContent): HTMLElement {
  const src = imageSrc(image);
  if (!src) return h('span', { class: 'meta', text: `[image ${image.mimeType}]` });
  const img = h('img', { class: 'thumb', attrs: { alt: 'Image', src } });
  return img;
}

function attachmentChip(a: PromptAttachment): HTMLElement {
  const label = a.kind === 'directory' && !a.path.endsWith('/') ? `@${a.path}/` : `@${a.path}`;
  return h('span', { class: `attachment kind-${a.kind}`, text: label, title: a.detail ? `Attached: ${a.detail}` : 'Attached' });
}

/** What a rewind would change, for the user to see before confirming. */
function rewindFiles(preview: RewindPreviewResult): HTMLElement {
  const el = h('div', { class: 'rewind-files' });
  if (preview.files.length === 0) {
    el.append(h('div', { class: 'meta', text: 'No file the agent wrote or edited since then.' }));
  } else {
    el.append(h('div', { class: 'label', text: 'Files a restore puts back' }));
    const list = h('ul', { class: 'file-list' });
    for (const f of preview.files) {
      const what = f.action === 'delete' ? 'delete (did not exist then)' : 'restore';
      const warn = f.changedSince ? ' · changed since the agent’s edit: those changes are lost too' : '';
      list.append(h('li', { class: `file action-${f.action}${f.changedSince ? ' changed-since' : ''}`, text: `${f.path} — ${what}${warn}` }));
    }
    el.append(list);
  }
  const { commands, files, moreFiles } = preview.notRestorable;
  if (commands.length || files.length) {
    el.append(h('div', { class: 'label', text: 'Cannot be undone: commands run since (what they changed is not tracked), files changed otherwise' }));
    const list = h('ul', { class: 'file-list not-restorable' });
    for (const c of commands) list.append(h('li', { class: 'command', text: `$ ${c}` }));
    for (const f of files) list.append(h('li', { class: 'file', text: f }));
    if (moreFiles) list.append(h('li', { class: 'meta', text: `and ${moreFiles} more files` }));
    el.append(list);
  }
  return el;
}

function renderModelChange(item: ModelChangeItem): HTMLElement {
  const el = h(
    'div',
    { class: 'marker model-change', attrs: { role: 'separator' } },
    h('div', { class: 'marker-line', text: `Model: ${item.model}` }),
  );
  if (item.note) el.append(h('div', { class: 'meta model-note', text: item.note }));
  return el;
}

function renderFileRestore(item: FileRestoreItem): HTMLElement {
  const n = item.files.length;
  const el = h(
    'div',
    { class: 'marker file-restore', attrs: { role: 'separator' } },
    h('div', { class: 'marker-line', text: `Files restored: ${n} file${n === 1 ? '' : 's'}` }),
  );
  const list = h('ul', { class: 'file-list' });
  for (const f of item.files) list.append(h('li', { text: `${f.path} — ${f.action === 'delete' ? 'deleted' : 'restored'}` }));
  el.append(list);
  return el;
}

function renderToolContent(c: ToolCallContent): HTMLElement {
  if (c.type === 'content') return h('pre', { class: 'code', text: c.content.text });
  const created = c.oldText === null;
  const el = h('div', { class: `diff${created ? ' created' : ''}` }, h('div', { class: 'meta diff-path', text: created ? `New file ${c.path}` : c.path }));
  const pre = h('pre', { class: 'code diff-lines' });
  const lines = (c.diff ?? fallbackDiff(c.oldText, c.newText)).replace(/\n$/, '').split('\n');
  for (const line of lines) {
    if (line.startsWith('+++') || line.startsWith('---')) continue;
    const kind = line.startsWith('+') ? 'add' : line.startsWith('-') ? 'del' : line.startsWith('@@') ? 'hunk' : 'ctx';
    pre.append(h('span', { class: `line ${kind}`, text: `${line}\n` }));
  }
  el.append(pre);
  return el;
}

/** Without the server's unified diff: every old line removed, every new line added. */
function fallbackDiff(oldText: string | null, newText: string): string {
  const removed = oldText === null ? [] : oldText.split('\n').map((l) => `-${l}`);
  return [...removed, ...newText.split('\n').map((l) => `+${l}`)].join('\n');
}

/** The command of a command tool (kind `execute`), shown whole instead of as JSON. */
function commandOf(kind: string, rawInput: unknown): string | undefined {
  if (kind !== 'execute' || typeof rawInput !== 'object' || rawInput === null) return undefined;
  const command = (rawInput as Record<string, unknown>)['command'];
  return typeof command === 'string' ? command : undefined;
}

/** Why a tool call did not run, when the user (or a remembered answer) rejected it. */
function denialOf(item: ToolCallItem): string | undefined {
  const raw = item.rawOutput;
  if (item.status !== 'failed' || typeof raw !== 'object' || raw === null) return undefined;
  const r = raw as Record<string, unknown>;
  if (r['permission'] !== 'denied') return undefined;
  return typeof r['reason'] === 'string' ? r['reason'] : 'permission was denied';
}

function sessionLabel(s: SessionSummary): string {
  const prompts = s.promptCount === undefined ? '' : ` · ${s.promptCount} prompt${s.promptCount === 1 ? '' : 's'}`;
  return `${s.title || 'Untitled'} · ${dateTime(s.createdAt)}${prompts} · ${s.sessionId.slice(0, 8)}`;
}

function sessionDetail(s: SessionSummary): string {
  return [
    s.firstPrompt ? `First prompt: ${s.firstPrompt}` : undefined,
    `Started ${dateTime(s.createdAt)}, last used ${relativeTime(s.updatedAt)}`,
    `Session ${s.sessionId}`,
  ]
    .filter((line): line is string => line !== undefined)
    .join('\n');
}

function dateTime(iso: string): string {
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return iso;
  const pad = (n: number): string => String(n).padStart(2, '0');
  return `${t.getFullYear()}-${pad(t.getMonth() + 1)}-${pad(t.getDate())} ${pad(t.getHours())}:${pad(t.getMinutes())}`;
}

function toolIcon(kind: string): string {
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

function mcpStateLabel(state: string): string {
  switch (state) {
    case 'starting':
      return 'starting…';
    case 'ready':
      return 'ready';
    case 'failed':
      return 'failed';
    default:
      return 'stopped';
  }
}

function statusLabel(status: string): string {
  switch (status) {
    case 'pending':
      return 'pending';
    case 'in_progress':
      return 'running';
    case 'completed':
      return 'done';
    case 'failed':
      return 'failed';
    case 'rejected':
      return 'rejected';
    default:
      return status;
  }
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
    case 'idle':
      return 'after an idle pause';
    default:
      return reason;
  }
}

function json(value: unknown): string {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

function findLast<T>(items: readonly T[], pred: (item: T) => boolean): T | undefined {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i] as T;
    if (pred(item)) return item;
  }
  return undefined;
}

function relativeTime(iso: string): string {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  const s = Math.max(0, (Date.now() - t) / 1000);
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return new Date(t).toISOString().slice(0, 10);
}
