/**
 * The chat webview's script. It runs the same reducer as the extension host on the actions the
 * host forwards (after a `reset` with the host's state), and renders the result.
 */
import { initialState, reduce, type ViewState } from '../state/reducer';
import type { HostToWebview, WebviewToHost } from '../view/messages';
import type { MemoryOpen } from './memory';
import { ChatView } from './view';

interface VsCodeApi {
  postMessage(message: WebviewToHost): void;
  getState(): unknown;
  setState(state: unknown): void;
}

declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
/** What the view keeps across its reloads: an unsent prompt, whether the plan and pins are open. */
interface Saved {
  draft?: string;
  memory?: MemoryOpen;
}
const saved = (vscode.getState() as Saved | undefined) ?? {};

let state: ViewState = initialState();
const root = document.getElementById('app');
if (!root) throw new Error('missing #app');
const view = new ChatView(root, (message) => vscode.postMessage(message), saved.draft ?? '', saved.memory);

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
    case 'insertText':
      view.insertText(message.text);
      break;
  }
});

// Keep an unsent prompt, and the plan and pins open or closed, across reloads of the view.
const save = (): void => vscode.setState({ draft: view.draft, memory: view.memoryOpen } satisfies Saved);
window.addEventListener('input', save);
// `toggle` does not bubble: heard on its way down.
window.addEventListener('toggle', (event) => {
  if (event.target instanceof HTMLDetailsElement && event.target.closest('.memory')) save();
}, true);

view.render(state);
vscode.postMessage({ type: 'ready' });
