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
};
