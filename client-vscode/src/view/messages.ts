/** Messages between the extension host and the chat webview. */
import type { ImageContent, PermissionMode, PinKind, RestoreChoice, ThinkingLevel } from '../protocol/types';
import type { Action, ViewState } from '../state/reducer';

export type HostToWebview =
  | { type: 'reset'; state: ViewState }
  | { type: 'actions'; actions: Action[] }
  | { type: 'focusInput' }
  /** Text for the prompt box, at the caret (an @-mention the user asked to add). */
  | { type: 'insertText'; text: string };

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
  /** What the agent changed since the entry, in the editor's multi-file diff. */
  | { type: 'showChangesSince'; entryId: string }
  /** The rewound prompt is in the input box now. */
  | { type: 'draftTaken'; seq: number }
  | { type: 'listModels' }
  | { type: 'setModel'; model: string }
  | { type: 'setMode'; mode: PermissionMode }
  /** Completions for the @-mention being typed (`query`: after the `@`). */
  | { type: 'completeMention'; query: string }
  /** A `/` at the start of the box: the workspace's prompt commands, for the menu. */
  | { type: 'listCommands' }
  /** `optionId` absent: the user dismissed the card (answered "cancelled"); `message`: with a
   * rejection, what the agent should do instead. */
  | { type: 'permission'; requestId: string; optionId?: string; message?: string }
  /** Review a pending file change in the editor's diff view (accept or reject it there). */
  | { type: 'reviewChange'; requestId: string }
  /** Open a workspace path in the editor (a link in a title, an answer, a diff). */
  | { type: 'open'; path: string; line?: number }
  /** Open a tool call's file change (its `index`th content) in the editor's diff view. */
  | { type: 'openDiff'; itemId: string; index: number }
  /** Open the editor's quick pick for the session, model, mode or thinking level. */
  | { type: 'pick'; what: 'session' | 'model' | 'mode' | 'thinking' }
  | { type: 'setThinking'; thinking: ThinkingLevel }
  /** A prompt typed ahead: send it now (after a stop), or drop it. */
  | { type: 'sendQueued'; id: string }
  | { type: 'removeQueued'; id: string }
  | { type: 'acceptTools' }
  | { type: 'restartMcp'; name: string }
  | { type: 'forgetPin'; pinId: string }
  /** A removed pin pinned again, as it was. */
  | { type: 'restorePin'; kind: PinKind; text: string }
  | { type: 'dismissProblem' }
  | { type: 'command'; command: 'showOutput' | 'openSettings' | 'setApiKey' | 'restartServer' };
