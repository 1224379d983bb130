/**
 * The little of the `vscode` API the unit-tested modules touch, enough to run them in Node.
 * Aliased as `vscode` in the unit project (vitest.config.ts).
 */
export class ThemeColor {
  constructor(public readonly id: string) {}
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export interface StubStatusBarItem {
  id: string;
  alignment: StatusBarAlignment;
  priority: number;
  name: string | undefined;
  text: string;
  tooltip: string | undefined;
  command: string | undefined;
  backgroundColor: ThemeColor | undefined;
  visible: boolean;
  show(): void;
  hide(): void;
  dispose(): void;
}

export const createdStatusBarItems: StubStatusBarItem[] = [];

/** The quick picks shown, each with the items it offered; each answers `undefined` (Escape). */
export const shownQuickPicks: { items: readonly QuickPickItem[]; options: unknown }[] = [];

export interface QuickPickItem {
  label: string;
  description?: string;
  detail?: string;
}

/** The notifications shown: (kind, text, the buttons' titles, the options: `modal`,
 * `detail`); each answers the next of `answers.message`, else `undefined`. */
export const shownNotices: { kind: 'error' | 'warning' | 'information'; text: string; actions: string[]; options?: unknown }[] = [];

/** The input boxes shown, with their options; each answers the next of `answers.inputBox`. */
export const shownInputBoxes: unknown[] = [];

/** What the next quick pick, input box and message answer, in order (when a list is empty:
 * `undefined`, as Escape). A quick pick's answer picks from the items it is shown. */
export const answers: {
  quickPick: ((items: readonly QuickPickItem[]) => QuickPickItem | undefined)[];
  inputBox: (string | undefined)[];
  message: (string | undefined)[];
} = { quickPick: [], inputBox: [], message: [] };

function notice(kind: 'error' | 'warning' | 'information') {
  return async (text: string, ...rest: unknown[]): Promise<string | undefined> => {
    const isAction = (a: unknown): boolean => typeof a === 'string' || (typeof a === 'object' && a !== null && 'title' in a);
    const actions = rest.filter(isAction).map((a) => (typeof a === 'string' ? a : (a as { title: string }).title));
    const options = rest.find((a) => !isAction(a));
    shownNotices.push({ kind, text, actions, ...(options === undefined ? {} : { options }) });
    return answers.message.shift();
  };
}

export const window = {
  showErrorMessage: notice('error'),
  showWarningMessage: notice('warning'),
  showInformationMessage: notice('information'),
  async showQuickPick<T extends QuickPickItem>(items: readonly T[] | Promise<readonly T[]>, options?: unknown): Promise<T | undefined> {
    const shown = await items;
    shownQuickPicks.push({ items: shown, options });
    return answers.quickPick.shift()?.(shown) as T | undefined;
  },
  async showInputBox(options?: unknown): Promise<string | undefined> {
    shownInputBoxes.push(options);
    return answers.inputBox.shift();
  },
  createStatusBarItem(id: string, alignment: StatusBarAlignment, priority: number): StubStatusBarItem {
    const item: StubStatusBarItem = {
      id,
      alignment,
      priority,
      name: undefined,
      text: '',
      tooltip: undefined,
      command: undefined,
      backgroundColor: undefined,
      visible: false,
      show() {
        item.visible = true;
      },
      hide() {
        item.visible = false;
      },
      dispose() {
        item.visible = false;
      },
    };
    createdStatusBarItems.push(item);
    return item;
  },
  createTerminal(options: StubTerminalOptions): StubTerminal {
    const terminal: StubTerminal = {
      options,
      shownPreservingFocus: [],
      show(preserveFocus?: boolean) {
        terminal.shownPreservingFocus.push(preserveFocus === true);
      },
      dispose() {
        options.pty.close();
      },
    };
    createdTerminals.push(terminal);
    return terminal;
  },
};

// ---------------------------------------------------------------------------------------------
// Webviews: enough for the chat's pages (src/view/chatViewProvider.ts).

export interface Disposable {
  dispose(): void;
}

type Listener<T> = (value: T) => void;

export class EventEmitter<T> {
  private listeners: Listener<T>[] = [];
  readonly event = (listener: Listener<T>): Disposable => {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  };
  fire(value: T): void {
    for (const l of [...this.listeners]) l(value);
  }
  dispose(): void {
    this.listeners = [];
  }
}

export class Uri {
  private constructor(readonly path: string) {}
  static file(path: string): Uri {
    return new Uri(path);
  }
  static joinPath(base: Uri, ...parts: string[]): Uri {
    return new Uri([base.path, ...parts].join('/'));
  }
  toString(): string {
    return `file://${this.path}`;
  }
}

export enum ViewColumn {
  Active = -1,
  Beside = -2,
  One = 1,
}

/** A webview whose page is the test: what the host posts to it, and `receive` for what the
 * page posts to the host. */
export class StubWebview {
  options: unknown;
  html = '';
  readonly cspSource = 'vscode-webview://stub';
  readonly posted: { type: string; [key: string]: unknown }[] = [];
  private readonly messages = new EventEmitter<unknown>();
  readonly onDidReceiveMessage = this.messages.event;
  asWebviewUri(uri: Uri): Uri {
    return uri;
  }
  async postMessage(message: { type: string }): Promise<boolean> {
    this.posted.push(message);
    return true;
  }
  receive(message: unknown): void {
    this.messages.fire(message);
  }
}

export class StubWebviewPanel {
  readonly webview = new StubWebview();
  visible = true;
  active = true;
  iconPath: unknown;
  revealed = 0;
  private readonly viewState = new EventEmitter<unknown>();
  private readonly disposed = new EventEmitter<void>();
  readonly onDidChangeViewState = this.viewState.event;
  readonly onDidDispose = this.disposed.event;
  constructor(
    readonly viewType: string,
    readonly title: string,
  ) {}
  reveal(): void {
    this.revealed += 1;
    this.setVisible(true);
  }
  setVisible(visible: boolean): void {
    this.visible = visible;
    this.viewState.fire({ webviewPanel: this });
  }
  dispose(): void {
    this.visible = false;
    this.disposed.fire();
  }
}

/** The editor tabs of webviews the code under test opened. */
export const createdWebviewPanels: StubWebviewPanel[] = [];

Object.assign(window, {
  createWebviewPanel(viewType: string, title: string): StubWebviewPanel {
    const panel = new StubWebviewPanel(viewType, title);
    createdWebviewPanels.push(panel);
    return panel;
  },
});

export interface StubPseudoterminal {
  onDidWrite(listener: (text: string) => void): { dispose(): void };
  open(): void;
  close(): void;
  handleInput?(data: string): void;
}

export interface StubTerminalOptions {
  name: string;
  pty: StubPseudoterminal;
  isTransient?: boolean;
}

export interface StubTerminal {
  options: StubTerminalOptions;
  /** Each `show`, whether it kept the focus where it was. */
  shownPreservingFocus: boolean[];
  show(preserveFocus?: boolean): void;
  dispose(): void;
}

/** The terminals created (`window.createTerminal` with a `pty`), in order. */
export const createdTerminals: StubTerminal[] = [];
