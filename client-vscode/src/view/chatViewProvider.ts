/**
 * The chat, where it shows: the "Agent" view in the sidebar (a WebviewView) and, on request, an
 * editor tab (a WebviewPanel, **Agent: Open Chat in Editor**). Both run the same webview page
 * on the one controller's state: the host forwards reducer actions to each in small batches,
 * and a (re)loaded page gets the whole state first. What a page posts goes to the one handler,
 * whichever page posted it.
 */
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import type { Action } from '../state/reducer';
import type { SessionController } from '../controller';
import { webviewHtml } from './html';
import type { HostToWebview, WebviewToHost } from './messages';

/** One page of the chat: a webview, whether its page said `ready`, what waits for it. */
class ChatPage implements vscode.Disposable {
  private ready = false;
  private queue: Action[] = [];
  /** Text for the prompt box asked for before the page was ready (it just opened). */
  private pendingText: string[] = [];
  private flushTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    readonly webview: vscode.Webview,
    extensionUri: vscode.Uri,
    private readonly controller: SessionController,
    onMessage: (message: WebviewToHost) => void,
  ) {
    const dist = vscode.Uri.joinPath(extensionUri, 'dist');
    const media = vscode.Uri.joinPath(extensionUri, 'media');
    webview.options = { enableScripts: true, localResourceRoots: [dist, media] };
    webview.html = webviewHtml({
      cspSource: webview.cspSource,
      nonce: randomBytes(18).toString('base64'),
      scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(dist, 'webview.js')).toString(),
      styleUri: webview.asWebviewUri(vscode.Uri.joinPath(media, 'chat.css')).toString(),
    });
    this.disposables.push(
      webview.onDidReceiveMessage((message: WebviewToHost) => {
        if (message?.type === 'ready') {
          this.ready = true;
          this.queue = [];
          void this.post({ type: 'reset', state: this.controller.state });
          for (const text of this.pendingText.splice(0)) void this.post({ type: 'insertText', text });
          return;
        }
        onMessage(message);
      }),
    );
  }

  /** A hidden page loses its document; it says `ready` again when shown. */
  hidden(): void {
    this.ready = false;
  }

  publish(actions: readonly Action[]): void {
    if (!this.ready) return;
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

  private flush(): void {
    this.flushTimer = undefined;
    if (!this.queue.length) return;
    const actions = this.queue;
    this.queue = [];
    void this.post({ type: 'actions', actions });
  }

  private post(message: HostToWebview): Thenable<boolean> {
    return this.webview.postMessage(message);
  }

  dispose(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.ready = false;
    for (const d of this.disposables.splice(0)) d.dispose();
  }
}

export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.WebviewPanelSerializer, vscode.Disposable {
  static readonly viewType = 'agentServer.chat';
  /** The chat in an editor tab. */
  static readonly panelType = 'agentServer.chatEditor';

  private view: vscode.WebviewView | undefined;
  private viewPage: ChatPage | undefined;
  private panel: vscode.WebviewPanel | undefined;
  private panelPage: ChatPage | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly resolvedEmitter = new vscode.EventEmitter<void>();
  /** Fires when the chat first shows, in the sidebar or in an editor tab (the extension starts
   * the server then). */
  readonly onDidResolve = this.resolvedEmitter.event;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly controller: SessionController,
    private readonly onMessage: (message: WebviewToHost) => void,
  ) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.viewPage?.dispose();
    this.view = view;
    const page = new ChatPage(view.webview, this.extensionUri, this.controller, this.onMessage);
    this.viewPage = page;
    this.disposables.push(
      view.onDidChangeVisibility(() => {
        if (!view.visible) page.hidden();
      }),
      view.onDidDispose(() => {
        if (this.view === view) {
          this.view = undefined;
          this.viewPage = undefined;
        }
        page.dispose();
      }),
    );
    this.resolvedEmitter.fire();
  }

  /** Opens the chat in an editor tab, or shows the one open: the same session as the sidebar. */
  openInEditor(): void {
    if (this.panel) {
      this.panel.reveal();
      return;
    }
    const panel = vscode.window.createWebviewPanel(ChatViewProvider.panelType, 'Agent', vscode.ViewColumn.Active, {
      enableScripts: true,
      localResourceRoots: [vscode.Uri.joinPath(this.extensionUri, 'dist'), vscode.Uri.joinPath(this.extensionUri, 'media')],
    });
    this.adoptPanel(panel);
  }

  /** An editor tab of the chat that VS Code brings back after a reload. */
  async deserializeWebviewPanel(panel: vscode.WebviewPanel): Promise<void> {
    if (this.panel && this.panel !== panel) {
      panel.dispose(); // one chat tab: the open one stays
      return;
    }
    this.adoptPanel(panel);
  }

  private adoptPanel(panel: vscode.WebviewPanel): void {
    this.panel = panel;
    panel.iconPath = vscode.Uri.joinPath(this.extensionUri, 'media', 'agent.svg');
    const page = new ChatPage(panel.webview, this.extensionUri, this.controller, this.onMessage);
    this.panelPage = page;
    this.disposables.push(
      panel.onDidChangeViewState(() => {
        if (!panel.visible) page.hidden();
      }),
      panel.onDidDispose(() => {
        if (this.panel === panel) {
          this.panel = undefined;
          this.panelPage = undefined;
        }
        page.dispose();
      }),
    );
    this.resolvedEmitter.fire();
  }

  /** Called with every action the controller applied: each open page gets them. */
  publish(actions: readonly Action[]): void {
    this.viewPage?.publish(actions);
    this.panelPage?.publish(actions);
  }

  /** The page the user sees: the editor tab when it shows, else the sidebar's. */
  private get shown(): ChatPage | undefined {
    return this.panel?.visible ? this.panelPage : this.viewPage;
  }

  focusInput(): void {
    this.shown?.focusInput();
  }

  insertText(text: string): void {
    this.shown?.insertText(text);
  }

  /** Whether the chat shows: in the sidebar or in an editor tab. */
  get visible(): boolean {
    return (this.view?.visible ?? false) || (this.panel?.visible ?? false);
  }

  /** Whether the chat shows in an editor tab (Add to Chat writes there, and opens no sidebar). */
  get visibleInEditor(): boolean {
    return this.panel?.visible ?? false;
  }

  dispose(): void {
    this.viewPage?.dispose();
    this.panelPage?.dispose();
    this.panel?.dispose();
    for (const d of this.disposables) d.dispose();
    this.resolvedEmitter.dispose();
  }
}
