/**
 * The "Agent" chat view: a WebviewView that renders the controller's state. The host forwards
 * reducer actions in small batches; a (re)loaded webview gets the whole state first.
 */
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import type { Action } from '../state/reducer';
import type { SessionController } from '../controller';
import { webviewHtml } from './html';
import type { HostToWebview, WebviewToHost } from './messages';

export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  static readonly viewType = 'agentServer.chat';

  private view: vscode.WebviewView | undefined;
  private ready = false;
  private queue: Action[] = [];
  /** Text for the prompt box asked for before the webview was ready (the view just opened). */
  private pendingText: string[] = [];
  private flushTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly resolvedEmitter = new vscode.EventEmitter<void>();
  /** Fires when the view is first shown (the extension starts the server then). */
  readonly onDidResolve = this.resolvedEmitter.event;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly controller: SessionController,
    private readonly onMessage: (message: WebviewToHost) => void,
  ) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    const dist = vscode.Uri.joinPath(this.extensionUri, 'dist');
    const media = vscode.Uri.joinPath(this.extensionUri, 'media');
    view.webview.options = { enableScripts: true, localResourceRoots: [dist, media] };
    view.webview.html = webviewHtml({
      cspSource: view.webview.cspSource,
      nonce: randomBytes(18).toString('base64'),
      scriptUri: view.webview.asWebviewUri(vscode.Uri.joinPath(dist, 'webview.js')).toString(),
      styleUri: view.webview.asWebviewUri(vscode.Uri.joinPath(media, 'chat.css')).toString(),
    });
    this.disposables.push(
      view.webview.onDidReceiveMessage((message: WebviewToHost) => {
        if (message?.type === 'ready') {
          this.ready = true;
          this.queue = [];
          void this.post({ type: 'reset', state: this.controller.state });
          for (const text of this.pendingText.splice(0)) void this.post({ type: 'insertText', text });
          return;
        }
        this.onMessage(message);
      }),
      view.onDidChangeVisibility(() => {
        // A hidden webview view loses its document; it says `ready` again when shown.
        if (!view.visible) this.ready = false;
      }),
      view.onDidDispose(() => {
        if (this.view === view) {
          this.view = undefined;
          this.ready = false;
        }
      }),
    );
    this.resolvedEmitter.fire();
  }

  /** Called with every action the controller applied. */
  publish(actions: readonly Action[]): void {
    if (!this.view || !this.ready) return;
    this.queue.push(...actions);
    this.flushTimer ??= setTimeout(() => this.flush(), 16);
  }

  focusInput(): void {
    void this.post({ type: 'focusInput' });
  }

  insertText(text: string): void {
    if (this.ready) void this.post({ type: 'insertText', text });
    else this.pendingText.push(text);
  }

  get visible(): boolean {
    return this.view?.visible ?? false;
  }

  private flush(): void {
    this.flushTimer = undefined;
    if (!this.queue.length) return;
    const actions = this.queue;
    this.queue = [];
    void this.post({ type: 'actions', actions });
  }

  private post(message: HostToWebview): Thenable<boolean> {
    return this.view?.webview.postMessage(message) ?? Promise.resolve(false);
  }

  dispose(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    for (const d of this.disposables) d.dispose();
    this.resolvedEmitter.dispose();
  }
}
