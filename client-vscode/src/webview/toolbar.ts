/**
 * The view's head: the session (its title; the editor's quick pick lists the sessions whole),
 * New, Compact now (with optional instructions), and the session's model, permission mode and
 * thinking level. Each picker is a short button that opens VS Code's quick pick, which shows
 * every choice in full at any width; nothing is cut to fit the view.
 */
import { formatTokens } from '../state/meter';
import type { ViewState } from '../state/reducer';
import { choicesOf } from '../protocol/settings';
import type { PermissionMode, ThinkingLevel } from '../protocol/types';
import { button, h, type Post } from './dom';
import { literal } from './literal';

/** Each mode's name, as the settings describe it (protocol/settings.ts). */
export const MODE_LABELS = Object.fromEntries(
  choicesOf('permissions.mode').map(([mode, label]) => [mode, label]),
) as Record<PermissionMode, string>;

const THINKING_LABELS: Record<ThinkingLevel, string> = {
  off: 'Thinking off',
  low: 'Thinking low',
  medium: 'Thinking medium',
  high: 'Thinking high',
};

export class Toolbar {
  readonly rows: HTMLElement[];
  readonly compactPanel: HTMLElement;
  private readonly session: HTMLButtonElement;
  private readonly newButton: HTMLButtonElement;
  private readonly compactButton: HTMLButtonElement;
  private readonly compactInput: HTMLInputElement;
  private readonly compactStatus: HTMLElement;
  /** The user asked for a compaction from the panel and waits for its outcome there. */
  private compactAsked = false;
  private readonly model: HTMLButtonElement;
  private readonly mode: HTMLButtonElement;
  private readonly thinking: HTMLButtonElement;
  /** Whether commands run in the sandbox: shown on the line of the MCP servers (view.ts),
   * what the tools run with, rather than a row of its own under the pickers. */
  readonly sandbox: HTMLElement;

  constructor(private readonly post: Post) {
    this.session = picker('session-picker', 'Sessions in this workspace', () => post({ type: 'pick', what: 'session' }));
    this.newButton = button('New', () => post({ type: 'newSession' }), 'secondary', 'Start a new session');
    this.compactButton = button(
      'Compact',
      () => {
        this.compactPanel.hidden = !this.compactPanel.hidden;
        if (!this.compactPanel.hidden) this.compactInput.focus();
      },
      'secondary',
      'Summarise the history now, optionally with instructions for the summary',
    );
    this.compactButton.setAttribute('aria-label', 'Compact now');
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
        e.stopPropagation();
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
    this.model = picker('model-picker', 'Model', () => post({ type: 'pick', what: 'model' }));
    this.mode = picker('mode-picker', 'When tools ask first', () => post({ type: 'pick', what: 'mode' }));
    this.thinking = picker('thinking-picker', 'How hard the model thinks', () => post({ type: 'pick', what: 'thinking' }));
    this.sandbox = h('span', { class: 'sandbox-state meta' });
    this.sandbox.hidden = true;
    this.rows = [
      h('div', { class: 'toolbar' }, this.session, this.newButton, this.compactButton),
      h('div', { class: 'toolbar session-bar' }, this.model, this.mode, this.thinking),
    ];
  }

  render(state: ViewState): void {
    const running = state.server.status === 'running';
    const busy = state.turn.status !== 'idle';
    const current = state.sessions.find((s) => s.sessionId === state.sessionId);
    setLabel(
      this.session,
      state.sessionId ? current?.title || state.title || 'Untitled session' : state.restoring ? 'Opening your last session…' : 'New session',
    );
    this.session.title = literal(
      state.sessionId
        ? `${current?.title || state.title || 'Untitled session'}: pick another session (${state.sessions.length} in this workspace)`
        : 'A new session starts with the first prompt; pick an earlier one',
    );
    this.session.disabled = !running || busy;
    this.newButton.disabled = !running || busy || !state.workspaceUri;
    this.compactButton.disabled = !running || busy || !state.sessionId || state.compacting;
    // "Compact" on the button, leaving the session's title the room; "Compact now" its name.
    this.compactButton.textContent = state.compacting ? 'Compacting…' : 'Compact';
    this.compactButton.setAttribute('aria-label', state.compacting ? 'Compacting…' : 'Compact now');

    const model = state.model;
    setLabel(this.model, model ? model.name : 'Model');
    this.model.title = literal(model ? `${model.name} (${model.id}), ${formatTokens(model.contextWindow)} window: switching keeps the session; the transcript says what it costs.` : 'Model');
    this.model.disabled = !running || busy;
    setLabel(this.mode, state.mode ? MODE_LABELS[state.mode] : 'Mode');
    this.mode.dataset['mode'] = state.mode ?? '';
    this.mode.disabled = !running;
    const thinking = state.thinking ?? 'off';
    setLabel(this.thinking, THINKING_LABELS[thinking]);
    this.thinking.dataset['thinking'] = thinking;
    this.thinking.disabled = !running || busy;
    this.thinking.title = literal(
      state.canThink === false
        ? `${model?.name ?? 'This model'} does not think on request; the level applies to a model that can.`
        : 'How hard the model thinks before it answers. A change re-reads the conversation without the cache on Anthropic: the transcript says what it costs.',
    );
    this.thinking.classList.toggle('inactive', state.canThink === false);
    this.renderSandbox(state);
    this.renderCompactOutcome(state);
  }

  private renderSandbox(state: ViewState): void {
    const sandbox = state.sandbox;
    const el = this.sandbox;
    el.hidden = !sandbox;
    if (!sandbox) return;
    el.textContent = literal(sandbox.sandboxed ? (sandbox.network ? 'Sandboxed' : 'Sandboxed, no network') : sandbox.reason ? 'No sandbox ⚠' : 'No sandbox');
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

  private renderCompactOutcome(state: ViewState): void {
    if (!this.compactAsked || state.compacting || !state.compactResult) return;
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

function picker(cls: string, label: string, open: () => void): HTMLButtonElement {
  const b = button('', open, `picker ${cls}`, label);
  b.setAttribute('aria-haspopup', 'listbox');
  b.setAttribute('aria-label', label);
  b.append(h('span', { class: 'picker-label' }), h('span', { class: 'picker-chevron', text: '▾', attrs: { 'aria-hidden': 'true' } }));
  return b;
}

function setLabel(b: HTMLButtonElement, text: string): void {
  const label = b.querySelector('.picker-label');
  if (label) label.textContent = literal(text);
}
