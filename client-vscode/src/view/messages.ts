/** Messages between the extension host and the chat webview. */
import type { ImageContent, PermissionMode, RestoreChoice } from '../protocol/types';
import type { Action, ViewState } from '../state/reducer';

export type HostToWebview =
  | { type: 'reset'; state: ViewState }
  | { type: 'actions'; actions: Action[] }
  | { type: 'focusInput' };

export type WebviewToHost =
  | { type: 'ready' }
  | { type: 'send'; text: string; images?: ImageContent[] }
  | { type: 'stop' }
  | { type: 'newSession' }
  | { type: 'loadSession'; sessionId: string }
  /** Scrolled to the top: the page of history before the first item. */
  | { type: 'loadOlder' }
  | { type: 'refreshSessions' }
  | { type: 'compact'; instructions?: string }
  /** "Rewind here": show what a rewind would change. */
  | { type: 'rewindPreview'; entryId: string }
  | { type: 'rewind'; entryId: string; restore?: RestoreChoice }
  | { type: 'rewindCancel' }
  /** The rewound prompt is in the input box now. */
  | { type: 'draftTaken'; seq: number }
  | { type: 'listModels' }
  | { type: 'setModel'; model: string }
  | { type: 'setMode'; mode: PermissionMode }
  /** Completions for the @-mention being typed (`query`: after the `@`). */
  | { type: 'completeMention'; query: string }
  /** `optionId` absent: the user dismissed the card (answered "cancelled"). */
  | { type: 'permission'; requestId: string; optionId?: string }
  | { type: 'acceptTools' }
  | { type: 'restartMcp'; name: string }
  | { type: 'forgetPin'; pinId: string }
  | { type: 'dismissProblem' }
  | { type: 'command'; command: 'showOutput' | 'openSettings' | 'setApiKey' | 'restartServer' };
