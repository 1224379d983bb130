/**
 * Wire types of the agent-server editor protocol (docs/protocol.md). camelCase, exactly as
 * sent. Nothing here depends on the `vscode` API; the webview bundle imports it too.
 */

// ---------------------------------------------------------------------------------------------
// Content blocks

export interface TextContent {
  type: 'text';
  text: string;
}

export interface ImageContent {
  type: 'image';
  mimeType: string;
  data: string;
}

export type PromptBlock = TextContent | ImageContent;

export interface ThinkingContent {
  type: 'thinking';
  thinking: string;
}

export interface ToolCallContentBlock {
  type: 'toolCall';
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

export type AssistantBlock = TextContent | ThinkingContent | ToolCallContentBlock;

// ---------------------------------------------------------------------------------------------
// Usage and cost

export interface Cost {
  input?: number;
  output?: number;
  cacheRead?: number;
  cacheWrite?: number;
  total?: number;
}

export interface MessageUsage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  totalTokens: number;
  cost?: Cost;
}

/** Tokens and cost of some model calls (`cost` in USD; `calls` where several are summed). */
export interface LastTurnUsage {
  input: number;
  cacheRead: number;
  cacheWrite: number;
  output: number;
  cost?: number;
  calls?: number;
}

/** `agent/usage` notification params and the `usage` of several results. */
export interface UsageSnapshot {
  sessionId: string;
  used: number;
  size: number;
  compactAt: number;
  windowNumber: number;
  /** The running turn, or the last one: its own calls (answers and compaction summaries). */
  lastTurn: LastTurnUsage;
  /** The last model call. */
  lastCall?: LastTurnUsage;
  /** Every call of the session. */
  session?: LastTurnUsage;
  cacheHitRate: number;
  cost: number;
}

// ---------------------------------------------------------------------------------------------
// Messages as the ledger records them (inside tool inputs and the like)

export interface UserMessage {
  role: 'user';
  content: string | PromptBlock[];
  /** Set for a note the editor added (e.g. `externalEdit`, `branchSummary`), not the user. */
  note?: string;
}

export interface AssistantMessage {
  role: 'assistant';
  content: AssistantBlock[];
  /** The provider-neutral stop reason of that model call (e.g. `toolUse`, `stop`). */
  stopReason?: string;
  usage?: MessageUsage;
  model?: string;
  provider?: string;
  errorMessage?: string;
}

export type CompactionReason = 'threshold' | 'overflow' | 'truncation' | 'manual' | 'idle';

// ---------------------------------------------------------------------------------------------
// Transcript (agent/session/load, agent/session/history): the live update shapes, plus markers

export interface CompactionMarker {
  kind: 'compaction';
  entryId: string;
  status: 'completed';
  reason: CompactionReason;
  tokensBefore: number;
  tokensAfter?: number;
  summary: string;
  /** null: the compaction kept nothing verbatim. */
  firstKeptEntryId: string | null;
}

export interface BranchMarker {
  kind: 'branch';
  entryId: string;
  /** The entry the conversation continued from (null: the very start). */
  targetId: string | null;
  /** A summary of the branch left behind, when the rewind asked for one. */
  summary?: string;
}

export interface ModelChangeMarker {
  kind: 'modelChange';
  entryId: string;
  provider: string;
  model: string;
  /** How hard the model thinks from here on (absent in sessions from before it was kept). */
  thinking?: ThinkingLevel;
}

/** What a restore did to one file: put back, or deleted (it did not exist at that point). */
export interface RestoredFile {
  path: string;
  action: 'restore' | 'delete';
}

export interface FileRestoreMarker {
  kind: 'fileRestore';
  entryId: string;
  /** The entry the files were put back to. */
  targetId: string;
  files: RestoredFile[];
}

/** One item of a loaded transcript: exactly a live `agent/update` update, or a marker. */
export type TranscriptItem = SessionUpdate | CompactionMarker | BranchMarker | FileRestoreMarker;

// ---------------------------------------------------------------------------------------------
// Models, modes, mentions

export type PermissionMode = 'ask' | 'allowReads' | 'allowAll';

/** How hard a model that can think does (`off`: the provider's default, no thinking on
 * Anthropic); Anthropic's budget or effort, OpenAI's reasoning effort. */
export type ThinkingLevel = 'off' | 'low' | 'medium' | 'high';
export const THINKING_LEVELS: readonly ThinkingLevel[] = ['off', 'low', 'medium', 'high'];

/** The model a session uses. */
export interface ModelRef {
  id: string;
  name: string;
  contextWindow: number;
}

/** A model the picker offers (`agent/model/list`): prices in USD per million tokens. */
export interface ModelChoice extends ModelRef {
  vendor: string;
  maxOutput: number;
  pricing: { input: number; output: number; cacheRead: number; cacheWrite: number };
  images: boolean;
  /** It takes a thinking level on the session's provider. */
  thinking?: boolean;
  /** `user`: from the user's models file. */
  source: 'builtin' | 'user';
  current: boolean;
}

export interface ModelListParams {
  sessionId?: string;
  workspaceUri?: string;
}
export interface ModelListResult {
  provider: string;
  current: string;
  models: ModelChoice[];
}

export interface ModelSetParams {
  sessionId: string;
  model: string;
}
/** What a switch costs at the next request, at list prices. */
export interface SwitchCost {
  tokens: number;
  switchedCost: number;
  stayedCost: number;
  compacts: boolean;
  compactAt: number;
  window: number;
}
export interface ModelSetResult {
  model: ModelRef;
  /** The ledger's modelChange entry (null: already that model). */
  entryId: string | null;
  cost: SwitchCost;
  /** The cost in words, for the transcript. */
  note: string;
  usage: UsageSnapshot;
}

export interface ThinkingSetParams {
  sessionId: string;
  thinking: ThinkingLevel;
}
export interface ThinkingSetResult {
  thinking: ThinkingLevel;
  canThink: boolean;
  /** The ledger's modelChange entry that records it (null: already that level). */
  entryId: string | null;
  cost: SwitchCost;
  /** What the change costs, in words, for the transcript. */
  note: string;
}

export interface ModeSetParams {
  sessionId: string;
  mode: PermissionMode;
}
/** A session's model and mode (also in the session/new and session/load results). */
export interface SessionState {
  model?: ModelRef;
  thinking?: ThinkingLevel;
  /** Whether the session's model takes a thinking level. */
  canThink?: boolean;
  mode?: PermissionMode;
  /** How the session's commands run; it follows the mode under `tools.sandbox: auto`. */
  sandbox?: SandboxState;
}

/** What a prompt's @-mention attached (the attached text itself is for the model). */
export interface PromptAttachment {
  path: string;
  kind: 'file' | 'directory' | 'image';
  detail?: string;
}

export interface MentionCompleteParams {
  workspaceUri: string;
  query: string;
  limit?: number;
}
export interface MentionItem {
  /** Workspace-relative; a folder ends with `/`. */
  path: string;
  kind: 'file' | 'directory';
}
export interface MentionCompleteResult {
  items: MentionItem[];
}

// ---------------------------------------------------------------------------------------------
// Requests (client to server)

export interface SessionNewParams {
  workspaceUri: string;
  model?: string;
  title?: string;
}
/** How a session's shell commands run; `reason` when a wanted sandbox is missing. */
export interface SandboxState {
  sandboxed: boolean;
  network: boolean;
  reason?: string;
}

export interface SessionNewResult extends SessionState {
  sessionId: string;
  usage: UsageSnapshot;
  sandbox?: SandboxState;
  mcp?: McpStatusParams;
}

export interface SessionListParams {
  workspaceUri: string;
}
export interface SessionSummary {
  sessionId: string;
  title: string | null;
  model: string;
  createdAt: string;
  updatedAt: string;
  entryCount: number;
  /** The first prompt (its first 200 characters): tells apart sessions with one title. */
  firstPrompt?: string | null;
  promptCount?: number;
}
export interface SessionListResult {
  sessions: SessionSummary[];
}

export interface SessionLoadParams {
  sessionId: string;
  /** Entries in the first page (default 100). */
  limit?: number;
}
/** What opening a damaged ledger repaired (docs/protocol.md). */
export interface LedgerRepair {
  message: string;
  keptEntries: number;
  issues: { line: number; offset: number; reason: string; action: 'skipped' | 'truncated' | 'newline_added' | 'reattached' }[];
  truncatedBytes: number;
  abortedToolCalls: string[];
}

export interface SessionLoadResult extends SessionState {
  sessionId: string;
  title?: string | null;
  leafId?: string | null;
  /** The latest page of the current branch, oldest first. */
  transcript: TranscriptItem[];
  /** Pass as `before` to agent/session/history for the page before; null: nothing older. */
  cursor?: string | null;
  usage: UsageSnapshot;
  sandbox?: SandboxState;
  repair?: LedgerRepair;
  mcp?: McpStatusParams;
}

export interface SessionHistoryParams {
  sessionId: string;
  before: string;
  limit?: number;
}
export interface SessionHistoryResult {
  sessionId: string;
  transcript: TranscriptItem[];
  cursor: string | null;
}

export interface TurnParams {
  sessionId: string;
  prompt: string | PromptBlock[];
  workDoneToken?: string | number;
}
export type TurnStopReason =
  | 'end_turn'
  | 'max_tokens'
  | 'max_turn_requests'
  | 'refusal'
  | 'cancelled'
  | 'error';
export interface TurnResult {
  turnId: string;
  stopReason: TurnStopReason;
  usage: UsageSnapshot;
  error?: { code: number | string; message: string };
}

export interface InterruptParams {
  sessionId: string;
}
export type InterruptResult = Record<string, never>;

/** `agent/userIdle`: whether the user is away (the window lost focus); `cacheRetention: "auto"`
 * then keeps the prompt cache for the long retention. */
export interface UserIdleParams {
  idle: boolean;
}
export type UserIdleResult = Record<string, never>;

export interface CompactParams {
  sessionId: string;
  instructions?: string;
}
export interface CompactResult {
  outcome: 'compacted' | 'noop' | 'failed';
  tokensBefore: number;
  tokensAfter: number;
  windowNumber: number;
  error?: string;
}

export type RestoreChoice = 'conversation' | 'files' | 'both';

export interface RewindParams {
  sessionId: string;
  /** A prompt: go to just before it (to ask again); any other entry: continue after it. */
  entryId: string;
  /** Leave the model a short summary of the branch left behind (one model call). */
  summarize?: boolean;
  /** What goes back: the conversation (default), the files the agent changed since, or both. */
  restore?: RestoreChoice;
}
export interface RewindResult {
  leafId: string | null;
  /** The prompt rewound from, to edit and send again (when the conversation went back). */
  prompt?: PromptBlock[];
  summary?: string;
  /** The files put back. */
  files?: RestoredFile[];
  /** Files that could not be put back, and why. */
  problems?: string[];
}

export interface RewindPreviewParams {
  sessionId: string;
  entryId: string;
}
/** What a rewind to an entry would do, before the user confirms. */
export interface RewindPreviewResult {
  entryId: string;
  /** When the entry is a prompt: the prompt that would come back to the input box. */
  prompt?: PromptBlock[];
  /** Files a restore would change; `changedSince`: edited after the agent's change too. */
  files: { path: string; action: 'restore' | 'delete'; changedSince: boolean }[];
  /** What a restore cannot put back: commands run since, files they (or someone) changed. */
  notRestorable: { commands: string[]; files: string[]; moreFiles: number };
}

export interface UsageParams {
  sessionId: string;
}

// ---------------------------------------------------------------------------------------------
// Notifications (server to client)

export type ToolKind = 'read' | 'edit' | 'search' | 'execute' | 'other';
export type ToolCallStatus = 'pending' | 'in_progress' | 'completed' | 'failed';

export interface ToolCallLocation {
  path: string;
  line?: number;
}

export type ToolCallContent =
  | { type: 'content'; content: TextContent }
  /** The Agent Client Protocol's diff (`oldText` null for a new file), plus `diff`: the
   * server's unified diff of the two. */
  | { type: 'diff'; path: string; oldText: string | null; newText: string; diff?: string };

export interface UserMessageUpdate {
  kind: 'userMessage';
  entryId: string;
  /** The entry the prompt follows: rewinding there lets the user ask again differently. */
  parentId?: string | null;
  /** What the user typed or pasted. */
  content: PromptBlock[];
  /** What its @-mentions attached. */
  attachments?: PromptAttachment[];
}
export interface MessageChunkUpdate {
  kind: 'messageChunk';
  messageId: string;
  content: TextContent;
}
export interface ThoughtChunkUpdate {
  kind: 'thoughtChunk';
  messageId: string;
  content: TextContent;
}
export interface ToolCallUpdateStart {
  kind: 'toolCall';
  toolCallId: string;
  title: string;
  toolKind: ToolKind;
  status: 'pending';
  rawInput: unknown;
  locations?: ToolCallLocation[];
}
export interface ToolCallProgressUpdate {
  kind: 'toolCallUpdate';
  toolCallId: string;
  status?: 'in_progress' | 'completed' | 'failed';
  content?: ToolCallContent[];
  rawOutput?: unknown;
}
export interface NoticeUpdate {
  kind: 'notice';
  level: 'info' | 'warning' | 'error';
  message: string;
  /** A failed model call about to be tried again: over once the call goes through. */
  retry?: { attempt: number; attempts: number; wait: number };
  /** In a loaded transcript, an editor note the model was given (an external edit, a branch
   * summary): its entry and kind. */
  entryId?: string;
  note?: string;
}

/** The session goes on with another model or thinking level from the next request, because a
 * setting changed (a switch the user made is answered by its request): the transcript's
 * marker, with the model's name and window and what the change costs. */
export interface ModelChangeUpdate extends ModelChangeMarker {
  modelInfo?: ModelRef;
  note?: string;
}

export type SessionUpdate =
  | ModelChangeUpdate
  | UserMessageUpdate
  | MessageChunkUpdate
  | ThoughtChunkUpdate
  | ToolCallUpdateStart
  | ToolCallProgressUpdate
  | NoticeUpdate;

export interface AgentUpdateParams {
  sessionId: string;
  turnId: string;
  seq: number;
  update: SessionUpdate;
}

export type UsageNotificationParams = UsageSnapshot;

export type CompactionStatus = 'started' | 'completed' | 'failed' | 'cancelled';

export interface CompactionParams {
  sessionId: string;
  compactionId: string;
  status: CompactionStatus;
  reason: CompactionReason;
  tokensBefore: number;
  tokensAfter?: number;
  summary?: string;
  firstKeptEntryId?: string;
  error?: string;
}

export interface OverflowParams {
  sessionId: string;
  turnId: string;
  kind: 'truncated' | 'rejected' | 'estimated';
  action: 'compacting' | 'retrying' | 'gaveUp';
  message: string;
}

/** `agent/context`: the decision taken on the context before a model call, and why. */
export interface ContextDecisionParams {
  sessionId: string;
  turnId: string | null;
  action: 'send' | 'compact' | 'refuse';
  reason: 'threshold' | 'truncation' | 'overflow' | 'manual' | 'idle' | 'oversized' | null;
  tokens: number;
  threshold: number;
  window: number;
}

// ---------------------------------------------------------------------------------------------
// Requests (server to client)

export type PermissionOptionKind = 'allow_once' | 'allow_always' | 'reject_once' | 'reject_always';

export interface PermissionOption {
  optionId: string;
  name: string;
  kind: PermissionOptionKind;
}

export interface PermissionToolCall {
  toolCallId: string;
  title: string;
  toolKind: ToolKind;
  rawInput: unknown;
  /** The file change a write or edit would make. */
  content?: ToolCallContent[];
}

export interface RequestPermissionParams {
  sessionId: string;
  toolCall: PermissionToolCall;
  options: PermissionOption[];
}

export interface RequestPermissionResult {
  /** `message`: with a rejection, what the agent should do instead; `newText`: with an
   * allowance of a file change, the file's content as the user revised it (written instead). */
  outcome: { selected: string; message?: string; newText?: string } | 'cancelled';
}

// ---------------------------------------------------------------------------------------------
// Initialization and settings

/** The `agent` settings section (workspace/configuration or initializationOptions.settings). */
export interface AgentSettings {
  provider?: 'anthropic' | 'openai-chat' | 'openai-responses' | 'sim';
  model?: string;
  baseUrl?: string;
  apiKeyEnv?: string;
  cacheRetention?: 'none' | 'short' | 'long' | 'auto';
  thinking?: ThinkingLevel;
  compaction?: {
    enabled?: boolean;
    reserveTokens?: number;
    keepRecentTokens?: number;
    model?: string;
  };
  permissions?: { mode?: 'ask' | 'allowReads' | 'allowAll' };
  tools?: {
    sandbox?: 'auto' | 'always' | 'off';
    network?: boolean;
    env?: { pass?: string[] };
  };
  sessionsDir?: string;
  mcp?: {
    servers?: Record<string, unknown>;
    startupTimeout?: number;
    toolTimeout?: number;
  };
}

// ---------------------------------------------------------------------------------------------
// MCP servers (docs/mcp.md)

export type McpServerState = 'starting' | 'ready' | 'failed' | 'stopped';

export interface McpServer {
  name: string;
  state: McpServerState;
  transport: 'stdio' | 'http' | 'sse';
  /** The command line or URL, secrets scrubbed. */
  target: string;
  /** The server's own tool names, as it lists them now. */
  tools: string[];
  trusted: boolean;
  source: string;
  error?: string;
  stderrTail?: string;
}

/** A change of the tool list waiting for the user (names as the model sees them). */
export interface McpToolsChange {
  added: string[];
  removed: string[];
  changed: string[];
  /** What the next request re-reads without the cache if the change is accepted. */
  tokens: number;
}

/** `agent/mcp/status` notification params, and the answer to `agent/mcp/servers`. */
export interface McpStatusParams {
  sessionId: string;
  servers: McpServer[];
  toolsChange: McpToolsChange | null;
  toolCount: number;
}

export interface McpAcceptToolsResult {
  accepted: boolean;
  deferred: boolean;
  tokens: number;
}

export interface AgentInitializationOptions {
  settings: AgentSettings;
  clientCapabilities: { requestPermission: boolean };
}

/** Error codes of docs/protocol.md. */
export const ErrorCodes = {
  InvalidParams: -32602,
  RequestCancelled: -32800,
  UnknownSession: -33001,
  SessionBusy: -33002,
  UnknownWorkspace: -33003,
  UnknownEntry: -33004,
  SessionLocked: -33005,
  ConfigurationError: -33010,
} as const;

/** Method names, one place. */
export const Methods = {
  sessionNew: 'agent/session/new',
  sessionList: 'agent/session/list',
  sessionLoad: 'agent/session/load',
  sessionHistory: 'agent/session/history',
  turn: 'agent/turn',
  interrupt: 'agent/interrupt',
  compact: 'agent/compact',
  rewind: 'agent/rewind',
  rewindPreview: 'agent/rewind/preview',
  usage: 'agent/usage',
  userIdle: 'agent/userIdle',
  modelList: 'agent/model/list',
  modelSet: 'agent/model/set',
  modeSet: 'agent/mode/set',
  thinkingSet: 'agent/thinking/set',
  mentionComplete: 'agent/mention/complete',
  update: 'agent/update',
  compaction: 'agent/compaction',
  overflow: 'agent/overflow',
  context: 'agent/context',
  requestPermission: 'agent/requestPermission',
  mcpStatus: 'agent/mcp/status',
  mcpServers: 'agent/mcp/servers',
  mcpAcceptTools: 'agent/mcp/acceptTools',
  mcpRestart: 'agent/mcp/restart',
} as const;
