/**
 * The chat webview's script. It runs the same reducer as the extension host on the actions the
 * host forwards (after a `reset` with the host's state), and renders the result.
 */
import { initialState, reduce, type ViewState } from '../state/reducer';
import type { HostToWebview, WebviewToHost } from '../view/messages';
import { ChatView } from './view';

interface VsCodeApi {
  postMessage(message: WebviewToHost): void;
  getState(): unknown;
  setState(state: unknown): void;
}

declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const saved = (vscode.getState() as { draft?: string } | undefined) ?? {};

let state: ViewState = initialState();
const root = document.getElementById('app');
if (!root) throw new Error('missing #app');
const view = new ChatView(root, (message) => vscode.postMessage(message), saved.draft ?? '');

let frame = 0;
function scheduleRender(): void {
  if (frame) return;
  frame = requestAnimationFrame(() => {
    frame = 0;
    view.render(state);
  });
}

window.addEventListener('message', (event: MessageEvent<HostToWebview>) => {
  const message = event.data;
  switch (message?.type) {
    case 'reset':
      state = message.state;
      scheduleRender();
      break;
    case 'actions':
      for (const action of message.actions) state = reduce(state, action);
      scheduleRender();
      break;
    case 'focusInput':
      view.focusInput();
      break;
  }
});

// Keep an unsent prompt across reloads of the view.
window.addEventListener('input', () => vscode.setState({ draft: view.draft }));

view.render(state);
vscode.postMessage({ type: 'ready' });
