/**
 * What the view says about the context and the server, above the transcript: the context
 * meter, the session's MCP servers (and a waiting change of their tools), and a banner when
 * the server is down or a setting needs fixing. Text only, never markup.
 */
import { formatTokens, meterFor } from '../state/meter';
import type { ViewState } from '../state/reducer';
import { button, h, type Post } from './dom';

export class ContextMeter {
  readonly el: HTMLElement;
  private readonly fill: HTMLElement;
  private readonly tick: HTMLElement;
  private readonly text: HTMLElement;

  constructor() {
    this.fill = h('div', { class: 'meter-fill' });
    this.tick = h('div', { class: 'meter-tick', title: 'Compaction threshold' });
    this.text = h('div', { class: 'meter-text' });
    this.el = h(
      'div',
      { class: 'meter', attrs: { role: 'meter', 'aria-label': 'Context window usage', 'aria-valuemin': '0', 'aria-valuemax': '100' } },
      h('div', { class: 'meter-bar' }, this.fill, this.tick),
      this.text,
    );
  }

  render(state: ViewState): void {
    const meter = meterFor(state.usage);
    if (!meter) {
      this.el.dataset['level'] = 'none';
      this.fill.style.width = '0%';
      this.tick.hidden = true;
      this.text.textContent = 'Context: no usage yet';
      this.el.title = '';
      // Nothing of the last session's figures stays: not its percentage (a screen reader
      // reads aria-valuenow), nor its "past the compaction point".
      this.el.removeAttribute('aria-valuenow');
      this.el.setAttribute('aria-valuetext', 'no usage yet');
      this.el.dataset['pastThreshold'] = 'false';
      return;
    }
    this.el.dataset['level'] = meter.level;
    this.el.setAttribute('aria-valuenow', String(Math.min(100, meter.percent)));
    this.el.removeAttribute('aria-valuetext');
    this.fill.style.width = `${Math.min(100, meter.percent)}%`;
    this.tick.hidden = false;
    this.tick.style.left = `${Math.min(100, meter.compactAtPercent)}%`;
    this.text.textContent = '';
    this.text.append(
      h('span', { class: 'meter-label', text: meter.label }),
      h('span', { class: 'meter-sep', text: ' · ' }),
      h('span', { class: 'meter-cache', text: meter.cacheLabel }),
      h('span', { class: 'meter-sep', text: ' · ' }),
      h('span', { class: 'meter-cost', text: meter.costLabel }),
      h('span', { class: 'meter-sep', text: ' · ' }),
      h('span', { class: 'meter-window', text: `window ${meter.windowNumber}` }),
    );
    this.el.dataset['pastThreshold'] = String(meter.pastThreshold);
    if (meter.pastThreshold) this.text.append(h('span', { class: 'meter-next', text: ' · compacts before the next request' }));
    this.el.title = meter.detail;
  }
}

/** One line per MCP server (a failed one opens to its error and stderr), and the waiting
 * change of the tool list with its price and an Accept button. */
export function renderMcp(el: HTMLElement, state: ViewState, post: Post): void {
  el.textContent = '';
  const mcp = state.mcp;
  if (!mcp || mcp.servers.length === 0) {
    el.hidden = true;
    return;
  }
  el.hidden = false;
  const running = state.server.status === 'running';
  for (const server of mcp.servers) {
    const label =
      `${server.name} · ${mcpStateLabel(server.state)}` +
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
    const restart = button('Restart', () => post({ type: 'restartMcp', name: server.name }), 'secondary');
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
    const accept = button('Accept', () => post({ type: 'acceptTools' }), 'primary');
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

export function renderBanner(b: HTMLElement, state: ViewState, post: Post): void {
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
        button('Show log', () => post({ type: 'command', command: 'showOutput' }), 'secondary'),
        button('Settings', () => post({ type: 'command', command: 'openSettings' }), 'secondary'),
        button('Restart server', () => post({ type: 'command', command: 'restartServer' }), 'primary'),
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
        button('Set API Key', () => post({ type: 'command', command: 'setApiKey' }), 'primary'),
        button('Open Settings', () => post({ type: 'command', command: 'openSettings' }), 'secondary'),
        button('Show log', () => post({ type: 'command', command: 'showOutput' }), 'secondary'),
        button('Dismiss', () => post({ type: 'dismissProblem' }), 'secondary'),
      ),
    );
  } else if (!state.workspaceUri) {
    b.classList.add('info');
    b.append(h('div', { class: 'banner-text', text: 'Open a folder: agent sessions belong to a workspace folder.' }));
  }
  b.hidden = b.childElementCount === 0;
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
