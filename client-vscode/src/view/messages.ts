/** Messages between the extension host and the chat webview. */
import type { Action, ViewState } from '../state/reducer';

export type HostToWebview =
  | { type: 'reset'; state: ViewState }
  | { type: 'actions'; actions: Action[] }
  | { type: 'focusInput' };

export type WebviewToHost =
  | { type: 'ready' }
  | { type: 'send'; text: string }
  | { type: 'stop' }
  | { type: 'newSession' }
  | { type: 'loadSession'; sessionId: string }
  /** Scrolled to the top: the page of history before the first item. */
  | { type: 'loadOlder' }
  | { type: 'refreshSessions' }
  | { type: 'compact'; instructions?: string }
  | { type: 'rewind'; entryId: string }
  /** `optionId` absent: the user dismissed the card (answered "cancelled"). */
  | { type: 'permission'; requestId: string; optionId?: string }
  | { type: 'acceptTools' }
  | { type: 'restartMcp'; name: string }
  | { type: 'dismissProblem' }
  | { type: 'command'; command: 'showOutput' | 'openSettings' | 'setApiKey' | 'restartServer' };
