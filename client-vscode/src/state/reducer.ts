/**
 * The chat view's state and the pure reducer that builds it from protocol events.
 *
 * The extension host and the webview run the same reducer on the same actions: the host keeps
 * a copy (for the status bar and to re-hydrate a re-created webview), the webview renders its
 * own. State is immutable: an item that did not change keeps its identity, so the renderer can
 * skip it.
 */
import type {
  AgentUpdateParams,
  PromptCommandItem,
  CompactResult,
  CompactionParams,
  CompactionReason,
  CompactionStatus,
  ImageContent,
  MentionItem,
  ModelChoice,
  ModelRef,
  ModelSetResult,
  McpStatusParams,
  NoticeLevel,
  OverflowParams,
  PermissionMode,
  PromptAttachment,
  RestoreChoice,
  RestoredFile,
  RewindPreviewResult,
  RewindResult,
  SandboxState,
  PermissionOption,
  PermissionToolCall,
  PromptBlock,
  RequestPermissionParams,
  RequestPermissionResult,
  SessionHistoryResult,
  SessionLoadResult,
  SessionSummary,
  ToolCallContent,
  ToolCallLocation,
  SessionUpdate,
  ThinkingLevel,
  ThinkingSetResult,
  ToolCallStatus,
  ToolKind,
  TranscriptItem,
  TurnResult,
  UsageSnapshot,
  PinInfo,
  PlanEntry,
} from '../protocol/types';
import { CompactionEndValues } from '../protocol/types';

// ---------------------------------------------------------------------------------------------
// View state

export interface UserItem {
  kind: 'user';
  id: string;
  /** The ledger entry; absent while the prompt is not yet recorded. */
  entryId?: string;
  /** The entry the prompt follows: the rewind target of a prompt (ask it again, differently). */
  parentId?: string;
  text: string;
  /** Images the user pasted or dropped (base64). */
  images: ImageContent[];
  /** What the prompt's @-mentions attached. */
  attachments: PromptAttachment[];
  pending: boolean;
  /** The prompt never reached the server's session (why); it stays, to be sent again. */
  failed?: string;
}

export interface AssistantItem {
  kind: 'assistant';
  id: string;
  messageId?: string;
  entryId?: string;
  text: string;
  thinking: string;
  error?: string;
  /** Cut off by a provider error and abandoned: the call was retried, and the retried
   * answer repeats it under another id (never recorded: no rewind here). */
  discarded?: boolean;
}

export interface ToolCallItem {
  kind: 'toolCall';
  id: string;
  toolCallId: string;
  title: string;
  toolKind: ToolKind;
  status: ToolCallStatus;
  rawInput: unknown;
  locations: ToolCallLocation[];
  content: ToolCallContent[];
  rawOutput?: unknown;
  /** Stopped before it finished (the turn was stopped): not a failure of the tool. */
  stopped?: boolean;
}

export interface CompactionItem {
  kind: 'compaction';
  id: string;
  compactionId?: string;
  entryId?: string;
  status: CompactionStatus;
  reason?: CompactionReason;
  tokensBefore: number;
  tokensAfter?: number;
  summary?: string;
  firstKeptEntryId?: string | null;
  error?: string;
}

/** One overflow of a turn and what the server did about it, as it goes: compacting, then
 * retrying (or giving up); `resolved` once the turn went on after the retry. */
export interface OverflowItem {
  kind: 'overflow';
  id: string;
  turnId: string;
  overflow: OverflowParams['kind'];
  action: OverflowParams['action'];
  message: string;
  /** Every step's message, in order. */
  steps: { action: OverflowParams['action']; message: string }[];
  resolved: boolean;
}

export interface NoticeItem {
  kind: 'notice';
  id: string;
  level: NoticeLevel;
  message: string;
  /** A model call being retried (one item per turn, the latest attempt); `resolved` once a
   * later call went through or the turn ended. */
  retry?: { attempt: number; attempts: number; wait: number };
  resolved?: boolean;
}

export interface PermissionItem {
  kind: 'permission';
  id: string;
  requestId: string;
  sessionId: string;
  toolCall: PermissionToolCall;
  options: PermissionOption[];
  status: 'pending' | 'answered' | 'cancelled';
  selected?: string;
}

export interface BranchItem {
  kind: 'branch';
  id: string;
  entryId: string;
  targetId: string | null;
}

/** The session went on with another model: the switch, and what it costs (`note`, live
 * only: the ledger keeps the model, not the words). */
export interface ModelChangeItem {
  kind: 'modelChange';
  id: string;
  /** The model's id, as the ledger records it (the same live and after a reload). */
  model: string;
  thinking?: ThinkingLevel;
  note?: string;
}

/** Files put back by a rewind. */
export interface FileRestoreItem {
  kind: 'fileRestore';
  id: string;
  files: RestoredFile[];
}

export type Item =
  | UserItem
  | AssistantItem
  | ToolCallItem
  | CompactionItem
  | OverflowItem
  | NoticeItem
  | PermissionItem
  | BranchItem
  | ModelChangeItem
  | FileRestoreItem;

export type ServerStatus = 'starting' | 'running' | 'stopped' | 'failed';

/** A prompt typed while the agent works (or while the last session reopens): sent, in
 * order, when the turn ends. */
export interface QueuedPrompt {
  id: string;
  text: string;
  images: ImageContent[];
}

export interface TurnState {
  status: 'idle' | 'running' | 'stopping';
  turnId?: string;
  /** Highest `seq` seen per turn; updates at or below it are duplicates and are dropped. */
  lastSeq?: number;
}

export interface ViewState {
  server: { status: ServerStatus; message?: string };
  workspaceUri?: string;
  sessions: SessionSummary[];
  sessionId?: string;
  title?: string;
  items: Item[];
  usage?: UsageSnapshot;
  turn: TurnState;
  /** A compaction is running (started, no terminal status yet) or was requested. */
  compacting: boolean;
  /** The history before the first item: its cursor (absent: nothing older), and whether a
   * page of it is on its way. */
  older: { cursor?: string; loading: boolean };
  /** The current session's MCP servers and a waiting change of its tool list. */
  mcp?: McpStatusParams;
  /** How the last requested compaction ended, for the Compact panel. */
  compactResult?: { outcome: CompactResult['outcome']; message: string };
  /** A configuration problem (e.g. no API key): shown in the banner with ways to fix it,
   * gone once the server restarts or a turn succeeds. */
  problem?: string;
  /** The session's model and permission mode; the models the picker offers. */
  model?: ModelRef;
  mode?: PermissionMode;
  /** How the session's commands run (from the server; absent before a session). */
  sandbox?: SandboxState;
  models: ModelChoice[];
  /** Completions for the @-mention being typed (`query`: what follows the `@`). */
  mentions?: { query: string; items: MentionItem[] };
  /** The prompt commands the server lists for the workspace (the `/` menu), once asked. */
  commands?: PromptCommandItem[];
  /** A rewind being decided: its target and, once known, what it would change. */
  rewind?: { entryId: string; preview?: RewindPreviewResult; busy: boolean };
  /** A prompt to put back in the input box (a rewound prompt), until the view takes it. */
  draft?: { seq: number; text: string; images: ImageContent[] };
  /** How hard the session's model thinks, and whether it can (its provider takes a level). */
  thinking?: ThinkingLevel;
  canThink?: boolean;
  /** The server is up and the last session is being reopened: a prompt waits for it. */
  restoring: boolean;
  /** Prompts typed ahead, sent in order once the running turn ends. */
  queue: QueuedPrompt[];
  /** The task's plan as the model last wrote it, and the pins in force (empty: none);
   * shown above the transcript, carried by the server across every compaction. */
  plan: PlanEntry[];
  pins: PinInfo[];
  /** Pins removed (by the user or the model) since the session was opened in this view,
   * newest first, at most REMOVED_PINS_SHOWN: shown struck through, with Undo, until the view
   * opens another session. One pinned again (same kind and text) leaves the list. */
  removedPins: PinInfo[];
  /** Monotonic counter for ids of items made here (notices, optimistic prompts). */
  counter: number;
}

export function initialState(): ViewState {
  return {
    server: { status: 'starting' },
    sessions: [],
    items: [],
    turn: { status: 'idle' },
    compacting: false,
    older: { loading: false },
    models: [],
    plan: [],
    pins: [],
    removedPins: [],
    counter: 0,
    restoring: false,
    queue: [],
  };
}

// ---------------------------------------------------------------------------------------------
// Actions

/** How a turn ended: the `agent/turn` result, or just a stop reason when there was none. */
export type TurnEnd = Pick<TurnResult, 'stopReason' | 'error'> & { turnId?: string; usage?: UsageSnapshot };

export type Action =
  | { type: 'serverStatus'; status: ServerStatus; message?: string }
  | { type: 'workspace'; workspaceUri?: string }
  | { type: 'sessionsListed'; sessions: SessionSummary[] }
  | {
      type: 'sessionStarted';
      sessionId: string;
      usage?: UsageSnapshot;
      title?: string;
      model?: ModelRef;
      mode?: PermissionMode;
      sandbox?: SandboxState;
      mcp?: McpStatusParams;
      thinking?: ThinkingLevel;
      canThink?: boolean;
    }
  | { type: 'mcpStatus'; params: McpStatusParams }
  /** The server does not list the session the view shows (a restart with another sessions
   * folder): the view forgets it, so that the next prompt starts a session there. */
  | { type: 'sessionForgotten' }
  /** The user renamed a session: its title in the list, and the view's if it is open. */
  | { type: 'sessionRenamed'; sessionId: string; title: string }
  /** Reopening the last session began (true) or is over (false). */
  | { type: 'restoring'; restoring: boolean }
  | { type: 'promptQueued'; text: string; images?: ImageContent[] }
  | { type: 'queueRemoved'; id: string }
  /** The settings' mode and thinking level: what the view shows before a session says. */
  | { type: 'settingsRead'; mode?: PermissionMode; thinking?: ThinkingLevel }
  | { type: 'thinkingChanged'; sessionId?: string; result: ThinkingSetResult }
  | { type: 'pinsChanged'; sessionId: string; pins: PinInfo[] }
  | { type: 'sessionLoaded'; result: SessionLoadResult }
  | { type: 'olderRequested'; sessionId: string }
  | { type: 'olderLoaded'; result: SessionHistoryResult }
  | { type: 'olderFailed'; sessionId: string; message: string }
  | { type: 'promptSent'; text: string; images?: ImageContent[] }
  | { type: 'update'; params: AgentUpdateParams }
  | { type: 'usage'; params: UsageSnapshot }
  | { type: 'compaction'; params: CompactionParams }
  | { type: 'overflow'; params: OverflowParams }
  | { type: 'permissionRequested'; requestId: string; params: RequestPermissionParams }
  | { type: 'permissionResolved'; requestId: string; outcome: RequestPermissionResult['outcome'] }
  | { type: 'turnEnded'; result: TurnEnd }
  | { type: 'turnFailed'; message: string; configuration?: boolean }
  | { type: 'problem'; message: string }
  | { type: 'problemDismissed' }
  | { type: 'stopRequested' }
  | { type: 'compactRequested' }
  | { type: 'compactFinished'; result: CompactResult }
  | { type: 'compactFailed'; message: string }
  | { type: 'notice'; level: NoticeItem['level']; message: string }
  | { type: 'modelsListed'; models: ModelChoice[]; current?: string }
  | { type: 'modelChanged'; sessionId?: string; result: ModelSetResult }
  | { type: 'modelChosen'; model: ModelRef }
  | { type: 'modeChanged'; sessionId?: string; mode: PermissionMode; sandbox?: SandboxState }
  | { type: 'mentionsListed'; query: string; items: MentionItem[] }
  | { type: 'commandsListed'; commands: PromptCommandItem[] }
  | { type: 'rewindRequested'; entryId: string }
  | { type: 'rewindPreviewed'; preview: RewindPreviewResult }
  | { type: 'rewindCancelled' }
  | { type: 'rewindStarted' }
  | { type: 'rewound'; restore: RestoreChoice; result: RewindResult }
  | { type: 'rewindFailed'; message: string }
  | { type: 'draftTaken'; seq: number };

// ---------------------------------------------------------------------------------------------
// Reducer

export const REMOVED_PINS_SHOWN = 5;

/** The pins in force become `pins`: those gone from the list join the removed ones (the
 * newest first), and a removed one pinned again leaves them. */
function withPins(state: ViewState, pins: PinInfo[]): ViewState {
  const gone = state.pins.filter((p) => !pins.some((q) => q.id === p.id));
  const again = (r: PinInfo): boolean => pins.some((q) => q.kind === r.kind && q.text === r.text);
  const removedPins = [...gone.reverse(), ...state.removedPins.filter((r) => !gone.some((g) => g.id === r.id))]
    .filter((r) => !again(r))
    .slice(0, REMOVED_PINS_SHOWN);
  return { ...state, pins, removedPins };
}

export function reduce(state: ViewState, action: Action): ViewState {
  switch (action.type) {
    case 'serverStatus': {
      const next: ViewState = {
        ...state,
        server: { status: action.status, message: action.message },
      };
      if (action.status === 'stopped' || action.status === 'failed') {
        // Whatever was in flight died with the server.
        return endTurn({ ...next, compacting: false });
      }
      // A (re)started server has the fix the problem asked for, or says so again.
      if (action.status === 'running') return { ...next, problem: undefined };
      return next;
    }

    case 'workspace':
      return { ...state, workspaceUri: action.workspaceUri };

    case 'sessionsListed':
      return { ...state, sessions: action.sessions };

    case 'sessionRenamed':
      return {
        ...state,
        title: action.sessionId === state.sessionId ? action.title : state.title,
        sessions: state.sessions.map((s) => (s.sessionId === action.sessionId ? { ...s, title: action.title } : s)),
      };

    case 'sessionStarted':
      return {
        ...state,
        sessionId: action.sessionId,
        title: action.title,
        // A prompt sent before the session existed stays (it is what started it).
        items: state.items.filter((i) => i.kind === 'user' && i.pending),
        usage: action.usage,
        turn: { status: 'idle' },
        compacting: false,
        older: { loading: false },
        model: action.model ?? state.model,
        mode: action.mode ?? state.mode,
        thinking: action.thinking ?? state.thinking,
        canThink: action.canThink ?? state.canThink,
        sandbox: action.sandbox,
        rewind: undefined,
        mcp: action.mcp,
        plan: [],
        pins: [],
        removedPins: [],
      };

    case 'sessionForgotten': {
      const fresh = initialState();
      return {
        ...state,
        sessionId: undefined,
        title: undefined,
        items: state.items.filter((i) => i.kind === 'user' && i.pending),
        usage: undefined,
        turn: fresh.turn,
        compacting: false,
        older: fresh.older,
        sandbox: undefined,
        rewind: undefined,
        mcp: undefined,
        plan: [],
        pins: [],
        removedPins: [],
      };
    }

    case 'restoring':
      return { ...state, restoring: action.restoring };

    case 'promptQueued': {
      const counter = state.counter + 1;
      const queued: QueuedPrompt = { id: `queued:${counter}`, text: action.text, images: action.images ?? [] };
      return { ...state, counter, queue: [...state.queue, queued] };
    }

    case 'queueRemoved':
      return { ...state, queue: state.queue.filter((q) => q.id !== action.id) };

    case 'settingsRead':
      // A session's own mode and level win; before one, the settings' are what it starts with.
      if (state.sessionId) return state;
      return { ...state, mode: action.mode ?? state.mode, thinking: action.thinking ?? state.thinking };

    case 'thinkingChanged': {
      if (action.sessionId !== undefined && action.sessionId !== state.sessionId) return state;
      const { result } = action;
      const next: ViewState = { ...state, thinking: result.thinking, canThink: result.canThink };
      if (!result.entryId || !state.model) return next;
      const marker: ModelChangeItem = {
        kind: 'modelChange',
        id: `entry:${result.entryId}`,
        model: state.model.id,
        thinking: result.thinking,
        note: result.note,
      };
      return { ...next, items: [...state.items, marker] };
    }
    case 'pinsChanged':
      return action.sessionId === state.sessionId ? withPins(state, action.pins) : state;

    case 'mcpStatus':
      // Only the current session's; another session's status arrives when it is loaded.
      return action.params.sessionId === state.sessionId ? { ...state, mcp: action.params } : state;

    case 'sessionLoaded': {
      const { result } = action;
      const items = itemsFromTranscript(result.transcript);
      const loaded: ViewState = {
        ...state,
        sessionId: result.sessionId,
        title: result.title ?? state.sessions.find((s) => s.sessionId === result.sessionId)?.title ?? undefined,
        items,
        usage: result.usage,
        turn: { status: 'idle' },
        compacting: false,
        older: { cursor: result.cursor ?? undefined, loading: false },
        model: result.model ?? (result.sessionId === state.sessionId ? state.model : undefined),
        mode: result.mode ?? (result.sessionId === state.sessionId ? state.mode : undefined),
        thinking: result.thinking ?? (result.sessionId === state.sessionId ? state.thinking : undefined),
        canThink: result.canThink ?? (result.sessionId === state.sessionId ? state.canThink : undefined),
        sandbox: result.sandbox,
        rewind: undefined,
        mcp: result.mcp,
        // A server from before issue 26 sends neither.
        plan: result.plan ?? [],
        pins: result.pins ?? [],
        removedPins: [],
      };
      // A damaged ledger was repaired on open: say so after the history it left.
      return result.repair ? addNotice(loaded, 'warning', result.repair.message) : loaded;
    }

    case 'olderRequested':
      if (action.sessionId !== state.sessionId || !state.older.cursor || state.older.loading) return state;
      return { ...state, older: { ...state.older, loading: true } };

    case 'olderLoaded': {
      const { result } = action;
      if (result.sessionId !== state.sessionId || !state.older.loading) return state;
      const known = new Set(state.items.map((i) => i.id));
      const older = itemsFromTranscript(result.transcript).filter((i) => !known.has(i.id));
      return {
        ...state,
        items: [...older, ...state.items],
        older: { cursor: result.cursor ?? undefined, loading: false },
      };
    }

    case 'olderFailed':
      if (action.sessionId !== state.sessionId) return state;
      return addNotice({ ...state, older: { ...state.older, loading: false } }, 'error', action.message);

    case 'promptSent': {
      const counter = state.counter + 1;
      const item: UserItem = {
        kind: 'user',
        id: `pending:${counter}`,
        text: action.text,
        images: action.images ?? [],
        attachments: [],
        pending: true,
      };
      return {
        ...state,
        counter,
        items: [...state.items, item],
        turn: { status: 'running' },
      };
    }

    case 'update':
      return applyUpdate(state, action.params);

    case 'usage':
      if (action.params.sessionId !== state.sessionId) return state;
      return { ...state, usage: action.params };

    case 'compaction':
      if (action.params.sessionId !== state.sessionId) return state;
      return applyCompaction(state, action.params);

    case 'overflow': {
      // One item per overflow of a turn, updated as the server compacts, retries or gives up.
      const p = action.params;
      if (p.sessionId !== state.sessionId) return state;
      const id = `overflow:${p.turnId}:${p.kind}`;
      const index = state.items.findIndex((i) => i.id === id);
      const old = index >= 0 ? (state.items[index] as OverflowItem) : undefined;
      const item: OverflowItem = {
        kind: 'overflow',
        id,
        turnId: p.turnId,
        overflow: p.kind,
        action: p.action,
        message: p.message,
        steps: [...(old?.steps ?? []), { action: p.action, message: p.message }],
        resolved: false,
      };
      const items = state.items.slice();
      if (old) items[index] = item;
      else items.push(item);
      return { ...state, items };
    }

    case 'permissionRequested': {
      const p = action.params;
      const item: PermissionItem = {
        kind: 'permission',
        id: `permission:${action.requestId}`,
        requestId: action.requestId,
        sessionId: p.sessionId,
        toolCall: p.toolCall,
        options: p.options,
        status: 'pending',
      };
      return { ...state, items: [...state.items, item] };
    }

    case 'permissionResolved':
      return mapItems(state, (item) =>
        item.kind === 'permission' && item.requestId === action.requestId
          ? action.outcome === 'cancelled'
            ? { ...item, status: 'cancelled' }
            : { ...item, status: 'answered', selected: action.outcome.selected }
          : item,
      );

    case 'turnEnded': {
      const { result } = action;
      let next = endTurn(state, result.stopReason !== 'error');
      if (result.stopReason === 'end_turn') next = { ...next, problem: undefined };
      const notice = stopNotice(result);
      if (notice) next = addNotice(next, notice.level, notice.message);
      if (result.usage && result.usage.sessionId === next.sessionId) next = { ...next, usage: result.usage };
      return next;
    }

    case 'turnFailed': {
      // The prompt did not become part of the session: it stays, marked, to be sent again.
      const failed = mapItems(state, (item) =>
        item.kind === 'user' && item.pending ? { ...item, pending: false, failed: action.message } : item,
      );
      const next = endTurn(failed);
      return action.configuration ? { ...next, problem: action.message } : addNotice(next, 'error', action.message);
    }

    case 'problem':
      return { ...state, problem: action.message };

    case 'problemDismissed':
      return { ...state, problem: undefined };

    case 'stopRequested':
      if (state.turn.status !== 'running') return state;
      return { ...state, turn: { ...state.turn, status: 'stopping' } };

    case 'compactRequested':
      return { ...state, compacting: true, compactResult: undefined };

    case 'compactFinished': {
      const r = action.result;
      const message =
        r.outcome === 'noop'
          ? 'Nothing to compact yet: the history is still short enough to keep whole. Your instructions are kept here for later.'
          : r.outcome === 'failed'
            ? `Compaction failed${r.error ? `: ${r.error}` : '.'}`
            : `Compacted: ${r.tokensBefore.toLocaleString('en-US')} → ${r.tokensAfter.toLocaleString('en-US')} tokens.`;
      const next = { ...state, compacting: false, compactResult: { outcome: r.outcome, message } };
      return r.outcome === 'failed' ? addNotice(next, 'error', message) : next;
    }

    case 'compactFailed':
      return addNotice(
        { ...state, compacting: false, compactResult: { outcome: 'failed', message: action.message } },
        'error',
        action.message,
      );

    case 'notice':
      return addNotice(state, action.level, action.message);

    case 'modelsListed': {
      const model = state.model ?? modelRef(action.models.find((m) => m.id === action.current));
      const listed = action.models.find((m) => m.id === model?.id);
      return {
        ...state,
        models: action.models,
        model,
        canThink: listed?.thinking ?? state.canThink,
      };
    }

    case 'modelChosen':
      return { ...state, model: action.model };

    case 'modelChanged': {
      if (action.sessionId !== undefined && action.sessionId !== state.sessionId) return state;
      const { result } = action;
      const marker: ModelChangeItem = {
        kind: 'modelChange',
        id: result.entryId ? `entry:${result.entryId}` : `model:${state.counter + 1}`,
        model: result.model.id,
        note: result.note,
      };
      const models = state.models.map((m) => ({ ...m, current: m.id === result.model.id }));
      const listed = models.find((m) => m.id === result.model.id);
      return {
        ...state,
        counter: state.counter + 1,
        model: result.model,
        canThink: listed?.thinking ?? state.canThink,
        models,
        usage: result.usage,
        items: result.entryId ? [...state.items, marker] : state.items,
      };
    }

    case 'modeChanged':
      if (action.sessionId !== undefined && action.sessionId !== state.sessionId) return state;
      return { ...state, mode: action.mode, sandbox: action.sandbox ?? (action.sessionId ? undefined : state.sandbox) };

    case 'mentionsListed':
      return { ...state, mentions: { query: action.query, items: action.items } };

    case 'commandsListed':
      return { ...state, commands: action.commands };

    case 'rewindRequested':
      return { ...state, rewind: { entryId: action.entryId, busy: false } };

    case 'rewindPreviewed':
      if (state.rewind?.entryId !== action.preview.entryId) return state;
      return { ...state, rewind: { ...state.rewind, preview: action.preview } };

    case 'rewindCancelled':
      return { ...state, rewind: undefined };

    case 'rewindStarted':
      return state.rewind ? { ...state, rewind: { ...state.rewind, busy: true } } : state;

    case 'rewound': {
      const { result } = action;
      let next: ViewState = { ...state, rewind: undefined };
      if (result.prompt && action.restore !== 'files') {
        const seq = (state.draft?.seq ?? 0) + 1;
        const images = result.prompt.filter((b): b is ImageContent => b.type === 'image');
        next = { ...next, draft: { seq, text: textOf(result.prompt), images } };
      }
      for (const problem of result.problems ?? []) next = addNotice(next, 'error', `Not restored: ${problem}`);
      return next;
    }

    case 'rewindFailed':
      return addNotice({ ...state, rewind: undefined }, 'error', action.message);

    case 'draftTaken':
      return state.draft?.seq === action.seq ? { ...state, draft: undefined } : state;
  }
}

function modelRef(model: ModelChoice | undefined): ModelRef | undefined {
  return model ? { id: model.id, name: model.name, contextWindow: model.contextWindow } : undefined;
}

/** Replays many actions (a fixture, a batch from the host). */
export function reduceAll(state: ViewState, actions: readonly Action[]): ViewState {
  return actions.reduce(reduce, state);
}

// ---------------------------------------------------------------------------------------------
// agent/update

function applyUpdate(state: ViewState, params: AgentUpdateParams): ViewState {
  if (params.sessionId !== state.sessionId) return state;
  let turn = state.turn;
  let counter = state.counter;
  let noticeId: string;
  if (!params.turnId) {
    // Outside a turn (a pin added from the command palette or another client, a file changed
    // between turns, a setting that switched the model): no turn starts, and each such update
    // numbers itself from 0, so its notice is named here.
    counter += 1;
    noticeId = `local:${counter}`;
  } else if (turn.turnId === params.turnId) {
    // seq starts at 0 for each turn; drop a repeat of one already applied.
    if (turn.lastSeq !== undefined && params.seq <= turn.lastSeq) return state;
    turn = { ...turn, lastSeq: params.seq };
    noticeId = `notice:${params.turnId}:${params.seq}`;
  } else {
    turn = {
      status: turn.status === 'idle' ? 'running' : turn.status,
      turnId: params.turnId,
      lastSeq: params.seq,
    };
    noticeId = `notice:${params.turnId}:${params.seq}`;
  }
  state = { ...state, counter };
  const u = params.update;
  if (u.kind === 'plan') return { ...state, turn, plan: u.entries };
  if (u.kind === 'pins') return { ...withPins(state, u.pins), turn };
  let items = applySessionUpdate(state.items, u, noticeId);
  // The model answered again (or a tool ran): a retry before it worked.
  if (u.kind === 'messageChunk' || u.kind === 'thoughtChunk' || u.kind === 'toolCall') items = resolveRetries(items);
  if (u.kind === 'modelChange') {
    // A setting switched the model or the level: the view follows it.
    const listed = state.models.find((m) => m.id === u.model);
    const model = u.modelInfo ?? modelRef(listed) ?? (state.model && { ...state.model, id: u.model, name: u.model });
    return {
      ...state,
      turn,
      items,
      model,
      thinking: u.thinking ?? state.thinking,
      canThink: listed?.thinking ?? state.canThink,
      models: state.models.map((m) => ({ ...m, current: m.id === u.model })),
    };
  }
  return { ...state, turn, items };
}

function resolveRetries(items: Item[]): Item[] {
  if (!items.some((i) => i.kind === 'notice' && i.retry && !i.resolved)) return items;
  return items.map((i) => (i.kind === 'notice' && i.retry && !i.resolved ? { ...i, resolved: true } : i));
}

/** One update applied to the items: the one code path for live updates and loaded
 * transcripts. `noticeId` names a notice item, should the update be one. */
function applySessionUpdate(items: Item[], u: SessionUpdate, noticeId: string): Item[] {
  switch (u.kind) {
    case 'userMessage': {
      const text = textOf(u.content);
      const images = u.content.filter((b): b is ImageContent => b.type === 'image');
      const id = `entry:${u.entryId}`;
      const pendingIndex = items.findIndex((i) => i.kind === 'user' && i.pending);
      const item: UserItem = {
        kind: 'user',
        id,
        entryId: u.entryId,
        ...(u.parentId ? { parentId: u.parentId } : {}),
        text,
        images,
        attachments: u.attachments ?? [],
        pending: false,
      };
      if (pendingIndex >= 0) {
        const out = items.slice();
        out[pendingIndex] = item;
        return out;
      }
      return [...items, item];
    }
    case 'messageChunk':
    case 'thoughtChunk': {
      const id = `msg:${u.messageId}`;
      const index = items.findIndex((i) => i.id === id);
      const field = u.kind === 'messageChunk' ? 'text' : 'thinking';
      if (index < 0) {
        const item: AssistantItem = {
          kind: 'assistant',
          id,
          messageId: u.messageId,
          // The answer is recorded in the ledger under the id its chunks carry.
          entryId: u.messageId,
          text: field === 'text' ? u.content.text : '',
          thinking: field === 'thinking' ? u.content.text : '',
        };
        return [...items, item];
      }
      const old = items[index] as AssistantItem;
      const out = items.slice();
      out[index] = { ...old, [field]: old[field] + u.content.text };
      return out;
    }
    case 'messageDiscarded': {
      const index = items.findIndex((i) => i.id === `msg:${u.messageId}`);
      if (index < 0) return items;
      const discarded: AssistantItem = { ...(items[index] as AssistantItem), discarded: true };
      delete discarded.entryId; // never recorded: nothing to rewind to
      const out = items.slice();
      out[index] = discarded;
      return out;
    }
    case 'toolCall': {
      const id = `tool:${u.toolCallId}`;
      const index = items.findIndex((i) => i.id === id);
      const item: ToolCallItem = {
        kind: 'toolCall',
        id,
        toolCallId: u.toolCallId,
        title: u.title,
        toolKind: u.toolKind,
        status: u.status,
        rawInput: u.rawInput,
        locations: u.locations ?? [],
        content: [],
      };
      if (index >= 0) {
        const out = items.slice();
        const old = out[index] as ToolCallItem;
        out[index] = { ...item, status: old.status === 'pending' ? item.status : old.status, content: old.content };
        return out;
      }
      return [...items, item];
    }
    case 'toolCallUpdate': {
      const id = `tool:${u.toolCallId}`;
      const index = items.findIndex((i) => i.id === id);
      const old: ToolCallItem =
        index >= 0
          ? (items[index] as ToolCallItem)
          : {
              kind: 'toolCall',
              id,
              toolCallId: u.toolCallId,
              title: u.toolCallId,
              toolKind: 'other',
              status: 'pending',
              rawInput: undefined,
              locations: [],
              content: [],
            };
      const rawOutput = u.rawOutput !== undefined ? u.rawOutput : old.rawOutput;
      const updated: ToolCallItem = {
        ...old,
        status: u.status ?? old.status,
        content: u.content ?? old.content,
        rawOutput,
        ...(wasAborted(rawOutput) ? { stopped: true } : {}),
      };
      const out = items.slice();
      if (index >= 0) out[index] = updated;
      else out.push(updated);
      return out;
    }
    case 'notice': {
      const item: NoticeItem = {
        kind: 'notice',
        id: noticeId,
        level: u.level,
        message: u.message,
        ...(u.retry ? { retry: u.retry, resolved: false } : {}),
      };
      if (u.retry) {
        // The latest attempt replaces the one before it: one line per retried call.
        const open = findLastIndex(items, (i) => i.kind === 'notice' && Boolean(i.retry) && !i.resolved);
        if (open >= 0) {
          const out = items.slice();
          out[open] = { ...item, id: (items[open] as NoticeItem).id };
          return out;
        }
      }
      return [...items, item];
    }
    case 'modelChange': {
      const id = `entry:${u.entryId}`;
      if (items.some((i) => i.id === id)) return items;
      const marker: ModelChangeItem = {
        kind: 'modelChange',
        id,
        model: u.model,
        ...(u.thinking ? { thinking: u.thinking } : {}),
        ...(u.note ? { note: u.note } : {}),
      };
      return [...items, marker];
    }
    case 'plan':
    case 'pins':
      return items; // not transcript items: the view's plan and pins (applyUpdate, sessionLoaded)
  }
}

// ---------------------------------------------------------------------------------------------
// agent/compaction

const TERMINAL: ReadonlySet<CompactionStatus> = new Set(CompactionEndValues);

function applyCompaction(state: ViewState, p: CompactionParams): ViewState {
  const id = `compaction:${p.compactionId}`;
  const index = state.items.findIndex((i) => i.id === id);
  const old = index >= 0 ? (state.items[index] as CompactionItem) : undefined;
  // Exactly one terminal status per compactionId: ignore anything after it.
  if (old && TERMINAL.has(old.status)) return state;
  const item: CompactionItem = {
    kind: 'compaction',
    id,
    compactionId: p.compactionId,
    status: p.status,
    reason: p.reason,
    tokensBefore: p.tokensBefore,
    tokensAfter: p.tokensAfter ?? old?.tokensAfter,
    summary: p.summary ?? old?.summary,
    firstKeptEntryId: p.firstKeptEntryId ?? old?.firstKeptEntryId,
    error: p.error,
  };
  const items = state.items.slice();
  if (old) items[index] = item;
  else items.push(item);
  const compacting = items.some((i) => i.kind === 'compaction' && i.status === 'started');
  return { ...state, items, compacting };
}

// ---------------------------------------------------------------------------------------------
// agent/session/load transcript

/** Turns a loaded transcript into view items through the same path as live updates;
 * compactions, rewinds and model changes become markers where they happened. */
export function itemsFromTranscript(transcript: readonly TranscriptItem[]): Item[] {
  let items: Item[] = [];
  let previous = 'start';
  for (const entry of transcript) {
    switch (entry.kind) {
      case 'compaction':
        items = [
          ...items,
          {
            kind: 'compaction',
            id: `entry:${entry.entryId}`,
            entryId: entry.entryId,
            status: 'completed',
            reason: entry.reason,
            tokensBefore: entry.tokensBefore,
            tokensAfter: entry.tokensAfter,
            summary: entry.summary,
            firstKeptEntryId: entry.firstKeptEntryId,
          },
        ];
        previous = entry.entryId;
        break;
      case 'branch':
        items = [...items, { kind: 'branch', id: `entry:${entry.entryId}`, entryId: entry.entryId, targetId: entry.targetId }];
        previous = entry.entryId;
        break;
      case 'modelChange':
        items = [
          ...items,
          { kind: 'modelChange', id: `entry:${entry.entryId}`, model: entry.model, ...(entry.thinking ? { thinking: entry.thinking } : {}) },
        ];
        previous = entry.entryId;
        break;
      case 'fileRestore':
        items = [...items, { kind: 'fileRestore', id: `entry:${entry.entryId}`, files: entry.files }];
        previous = entry.entryId;
        break;
      default: {
        // An editor note is an entry; another notice is named after what it follows.
        const noticeId = entry.kind === 'notice' && entry.entryId ? `entry:${entry.entryId}` : `notice:after:${previous}`;
        items = applySessionUpdate(items, entry, noticeId);
        const last = items[items.length - 1];
        if (last && last.kind !== 'notice') previous = last.id;
      }
    }
  }
  return items;
}

// ---------------------------------------------------------------------------------------------
// helpers

function textOf(blocks: readonly PromptBlock[]): string {
  return blocks
    .filter((b): b is Extract<PromptBlock, { type: 'text' }> => b.type === 'text')
    .map((b) => b.text)
    .join('\n\n');
}

function mapItems(state: ViewState, f: (item: Item) => Item): ViewState {
  let changed = false;
  const items = state.items.map((item) => {
    const next = f(item);
    if (next !== item) changed = true;
    return next;
  });
  return changed ? { ...state, items } : state;
}

/** The turn is over: nothing of it stays pending or running. A tool call still running was
 * stopped with the turn (the server records it so: `aborted`); retries and an overflow that
 * led to a retry are over too (`wentOn`: the turn did not end in an error). */
function endTurn(state: ViewState, wentOn = false): ViewState {
  const next = mapItems(state, (item) => {
    if (item.kind === 'user' && item.pending) return { ...item, pending: false };
    if (item.kind === 'permission' && item.status === 'pending') return { ...item, status: 'cancelled' };
    if (item.kind === 'toolCall' && (item.status === 'pending' || item.status === 'in_progress')) {
      return { ...item, status: 'failed', stopped: true };
    }
    if (item.kind === 'notice' && item.retry && !item.resolved) return { ...item, resolved: true };
    if (item.kind === 'overflow' && !item.resolved && wentOn && item.action === 'retrying') return { ...item, resolved: true };
    return item;
  });
  return { ...next, turn: { status: 'idle' } };
}

/** Whether a tool's rawOutput says it was stopped before it finished. */
function wasAborted(rawOutput: unknown): boolean {
  return typeof rawOutput === 'object' && rawOutput !== null && (rawOutput as Record<string, unknown>)['aborted'] === true;
}

function findLastIndex<T>(items: readonly T[], pred: (item: T) => boolean): number {
  for (let i = items.length - 1; i >= 0; i--) if (pred(items[i] as T)) return i;
  return -1;
}

/** The assistant message being streamed: the last one, when the turn runs and it belongs to
 * the running turn (after the last prompt); none before the turn's first chunk. */
export function streamingItemId(state: ViewState): string | undefined {
  if (state.turn.status === 'idle') return undefined;
  for (let i = state.items.length - 1; i >= 0; i--) {
    const item = state.items[i] as Item;
    if (item.kind === 'assistant') return item.discarded ? undefined : item.id;
    if (item.kind === 'user') return undefined;
  }
  return undefined;
}

function addNotice(state: ViewState, level: NoticeItem['level'], message: string): ViewState {
  const counter = state.counter + 1;
  const item: NoticeItem = { kind: 'notice', id: `local:${counter}`, level, message };
  return { ...state, counter, items: [...state.items, item] };
}

function stopNotice(result: TurnEnd): { level: NoticeItem['level']; message: string } | undefined {
  switch (result.stopReason) {
    case 'end_turn':
      return undefined;
    case 'cancelled':
      return { level: 'info', message: 'Stopped.' };
    case 'max_tokens':
      return { level: 'warning', message: 'The reply was cut off at the output limit.' };
    case 'max_turn_requests':
      return { level: 'warning', message: 'The turn stopped at the step limit.' };
    case 'refusal':
      return { level: 'warning', message: 'The model declined to continue.' };
    case 'error':
      return { level: 'error', message: result.error?.message ?? 'The turn failed.' };
    default:
      return undefined;
  }
}

/** The rewind target of an item, if it has one (messages recorded in the ledger): a prompt
 * (the server goes to just before it and gives it back, to ask again differently), or an
 * answer (the conversation continues after it). Nothing is deleted either way. */
export function rewindTarget(item: Item): string | undefined {
  if (item.kind === 'user') return item.entryId;
  if (item.kind === 'assistant' && item.entryId) return item.entryId;
  return undefined;
}
