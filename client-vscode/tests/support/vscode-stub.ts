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

/** The notifications shown: (kind, text, the buttons' titles); each answers `undefined`. */
export const shownNotices: { kind: 'error' | 'warning' | 'information'; text: string; actions: string[] }[] = [];

function notice(kind: 'error' | 'warning' | 'information') {
  return async (text: string, ...actions: { title: string }[]): Promise<undefined> => {
    shownNotices.push({ kind, text, actions: actions.map((a) => a.title) });
    return undefined;
  };
}

export const window = {
  showErrorMessage: notice('error'),
  showWarningMessage: notice('warning'),
  showInformationMessage: notice('information'),
  async showQuickPick<T extends QuickPickItem>(items: readonly T[] | Promise<readonly T[]>, options?: unknown): Promise<T | undefined> {
    shownQuickPicks.push({ items: await items, options });
    return undefined;
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
