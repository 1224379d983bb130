// Generated from agent_server/protocol.py by `make protocol`: do not edit.
// The test suite fails when this file is not what the description gives.

/**
 * Wire types of the agent-server editor protocol (docs/protocol.md). camelCase, exactly
 * as sent. Nothing here depends on the `vscode` API; the webview bundle imports it too.
 */
import type { Provider } from './providers';

export const ContextActionValues = ['send', 'compact', 'wait', 'refuse'] as const;
export type ContextAction = (typeof ContextActionValues)[number];

export type DecisionReason = CompactionReason | 'oversized';

export const CompactionEngineValues = ['local', 'provider'] as const;
export type CompactionEngine = (typeof CompactionEngineValues)[number];

export const AttachmentKindValues = ['file', 'directory', 'image'] as const;
export type AttachmentKind = (typeof AttachmentKindValues)[number];

export const ThinkingLevelValues = ['off', 'low', 'medium', 'high'] as const;
export type ThinkingLevel = (typeof ThinkingLevelValues)[number];

export const CompactionReasonValues = ['threshold', 'overflow', 'truncation', 'manual', 'idle', 'requested'] as const;
export type CompactionReason = (typeof CompactionReasonValues)[number];

export const PinAuthorValues = ['user', 'model'] as const;
export type PinAuthor = (typeof PinAuthorValues)[number];

export const PlanPriorityValues = ['high', 'medium', 'low'] as const;
export type PlanPriority = (typeof PlanPriorityValues)[number];

export const PlanStatusValues = ['pending', 'in_progress', 'completed'] as const;
export type PlanStatus = (typeof PlanStatusValues)[number];

export const PinKindValues = ['rule', 'fact'] as const;
export type PinKind = (typeof PinKindValues)[number];

export const IssueActionValues = ['skipped', 'truncated', 'newline_added', 'reattached', 'unknownType'] as const;
export type IssueAction = (typeof IssueActionValues)[number];

/** When the agent asks before running a tool. */
export const PermissionModeValues = ['ask', 'allowReads', 'allowAll'] as const;
export type PermissionMode = (typeof PermissionModeValues)[number];

export const PermissionOptionKindValues = ['allow_once', 'allow_always', 'reject_once', 'reject_always'] as const;
export type PermissionOptionKind = (typeof PermissionOptionKindValues)[number];

/** What a rewind puts back. */
export const RestoreChoiceValues = ['conversation', 'files', 'both'] as const;
export type RestoreChoice = (typeof RestoreChoiceValues)[number];

/** What a restore does to a file: put it back, or delete it (it did not exist then). */
export const FileActionValues = ['restore', 'delete'] as const;
export type FileAction = (typeof FileActionValues)[number];

/** The Agent Client Protocol's tool kinds; the editor picks an icon by it. */
export const ToolKindValues = ['read', 'edit', 'search', 'execute', 'other'] as const;
export type ToolKind = (typeof ToolKindValues)[number];

export const ToolCallStatusValues = ['pending', 'in_progress', 'completed', 'failed'] as const;
export type ToolCallStatus = (typeof ToolCallStatusValues)[number];

export const ToolProgressValues = ['in_progress', 'completed', 'failed'] as const;
export type ToolProgress = (typeof ToolProgressValues)[number];

export const NoticeLevelValues = ['info', 'warning', 'error'] as const;
export type NoticeLevel = (typeof NoticeLevelValues)[number];

export const TurnStopReasonValues = ['end_turn', 'max_tokens', 'max_turn_requests', 'refusal', 'cancelled', 'error'] as const;
export type TurnStopReason = (typeof TurnStopReasonValues)[number];

export const CompactionEndValues = ['completed', 'failed', 'cancelled'] as const;
export type CompactionEnd = (typeof CompactionEndValues)[number];

export const CompactionStatusValues = ['started', 'completed', 'failed', 'cancelled'] as const;
export type CompactionStatus = (typeof CompactionStatusValues)[number];

/**
 * truncated: the last answer was cut off by the window; rejected: the provider refused the
 * request as too long; estimated: not sent, its estimate over the window or holding one
 * already rejected.
 */
export const OverflowKindValues = ['truncated', 'rejected', 'estimated'] as const;
export type OverflowKind = (typeof OverflowKindValues)[number];

export const OverflowActionValues = ['compacting', 'retrying', 'gaveUp'] as const;
export type OverflowAction = (typeof OverflowActionValues)[number];

export const McpServerStateValues = ['starting', 'ready', 'failed', 'stopped'] as const;
export type McpServerState = (typeof McpServerStateValues)[number];

export const McpTransportValues = ['stdio', 'http', 'sse'] as const;
export type McpTransport = (typeof McpTransportValues)[number];

/** `auto`: short, or long while the user is away and after a pause past the short one. */
export const CacheRetentionSettingValues = ['none', 'short', 'long', 'auto'] as const;
export type CacheRetentionSetting = (typeof CacheRetentionSettingValues)[number];

/**
 * Whether shell commands run in the sandbox (`auto`: every command where the machine can, the
 * user may let one out; `always`: every command, or none; `off`).
 */
export const SandboxModeValues = ['auto', 'always', 'off'] as const;
export type SandboxMode = (typeof SandboxModeValues)[number];

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

/** Tokens and cost of some model calls (`cost` in USD; `calls` where several are summed). */
export interface LastTurnUsage {
  input: number;
  cacheRead: number;
  cacheWrite: number;
  output: number;
  cost: number;
  calls?: number;
}

/** `agent/usage` notification params and the `usage` of several results. */
export interface UsageSnapshot {
  sessionId: string;
  used: number;
  size: number;
  compactAt: number;
  windowNumber: number;
  /** The last model call. */
  lastCall: LastTurnUsage;
  /** The running turn, or the last one: its own calls (answers and compaction summaries). */
  lastTurn: LastTurnUsage;
  /** Every call of the session. */
  session: LastTurnUsage;
  cacheHitRate: number;
  cost: number;
}

export type UsageNotificationParams = UsageSnapshot;

/** What a prompt's @-mention attached (the attached text itself is for the model). */
export interface PromptAttachment {
  path: string;
  kind: AttachmentKind;
  detail?: string;
}

export interface ToolCallLocation {
  path: string;
  line?: number;
}

/** What the tool returned: its text, or an image (an MCP tool's screenshot). */
export interface ToolCallTextContent {
  type: 'content';
  content: PromptBlock;
}

/**
 * The Agent Client Protocol's diff (`oldText` null for a new file), plus `diff`: the
 * server's unified diff of the two.
 */
export interface ToolCallDiffContent {
  type: 'diff';
  path: string;
  oldText: string | null;
  newText: string;
  diff?: string;
}

export type ToolCallContent = ToolCallTextContent | ToolCallDiffContent;

export interface UserMessageUpdate {
  kind: 'userMessage';
  entryId: string;
  /** The entry the prompt follows: rewinding there lets the user ask again differently. */
  parentId: string | null;
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

/**
 * Live only: a model call failed after part of its answer had streamed, and is retried.
 * The chunks of `messageId` (text and thoughts) are abandoned, never recorded (a reload does
 * not show them); the retried answer streams from its start under another id.
 */
export interface MessageDiscardedUpdate {
  kind: 'messageDiscarded';
  messageId: string;
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
  status?: ToolProgress;
  content?: ToolCallContent[];
  rawOutput?: unknown;
}

/**
 * A failed model call about to be tried again: attempt `attempt` of `attempts`, after
 * `wait` seconds.
 */
export interface RetryInfo {
  attempt: number;
  attempts: number;
  wait: number;
}

export interface NoticeUpdate {
  kind: 'notice';
  level: NoticeLevel;
  message: string;
  /**
   * A model call being retried after a provider error: the notice is over once a later
   * update of the turn comes.
   */
  retry?: RetryInfo;
  /**
   * In a loaded transcript, an editor note the model was given (an external edit, a branch
   * summary): its entry and kind.
   */
  entryId?: string;
  note?: string;
}

export interface ModelChangeMarker {
  kind: 'modelChange';
  entryId: string;
  provider: string;
  model: string;
  /**
   * How hard the model thinks from here on (absent in sessions from before it was kept:
   * off).
   */
  thinking?: ThinkingLevel;
}

/**
 * The session goes on with another model or thinking level from this turn, because a
 * setting changed (a switch the user asked for is answered by its own request): the
 * transcript's marker, with the model's name and window and what the change costs.
 */
export interface ModelChangeUpdate {
  kind: 'modelChange';
  entryId: string;
  provider: string;
  model: string;
  thinking?: ThinkingLevel;
  modelInfo: ModelRef;
  note: string;
}

/** One step of the task's plan (the Agent Client Protocol's plan entry). */
export interface PlanEntry {
  content: string;
  status: PlanStatus;
  priority: PlanPriority;
}

/** The model wrote the task's plan: the whole list, replacing the one shown. */
export interface PlanUpdate {
  kind: 'plan';
  entries: PlanEntry[];
}

/** A rule or a fact pinned for the session: carried verbatim across every compaction. */
export interface PinInfo {
  id: string;
  kind: PinKind;
  text: string;
  by: PinAuthor;
}

/** The pins in force, after the user or the model added or removed one. */
export interface PinsUpdate {
  kind: 'pins';
  pins: PinInfo[];
}

export type SessionUpdate = UserMessageUpdate | MessageChunkUpdate | ThoughtChunkUpdate | MessageDiscardedUpdate | ToolCallUpdateStart | ToolCallProgressUpdate | NoticeUpdate | ModelChangeUpdate | PlanUpdate | PinsUpdate;

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

/** What a restore did to one file: put back, or deleted (it did not exist at that point). */
export interface RestoredFile {
  path: string;
  action: FileAction;
}

export interface FileRestoreMarker {
  kind: 'fileRestore';
  entryId: string;
  /** The entry the files were put back to. */
  targetId: string;
  files: RestoredFile[];
}

/** One item of a loaded transcript: exactly a live `agent/update` update, or a marker. */
export type TranscriptItem = UserMessageUpdate | MessageChunkUpdate | ThoughtChunkUpdate | MessageDiscardedUpdate | ToolCallUpdateStart | ToolCallProgressUpdate | NoticeUpdate | ModelChangeUpdate | PlanUpdate | PinsUpdate | CompactionMarker | BranchMarker | ModelChangeMarker | FileRestoreMarker;

/** The model a session uses. */
export interface ModelRef {
  id: string;
  name: string;
  contextWindow: number;
}

/** How a session's shell commands run; `reason` when a wanted sandbox is missing. */
export interface SandboxState {
  sandboxed: boolean;
  network: boolean;
  reason?: string;
}

/**
 * A session's model, thinking level and mode (also in the session/new and session/load
 * results).
 */
export interface SessionState {
  model: ModelRef;
  thinking: ThinkingLevel;
  /** Whether the session's model takes a thinking level on its provider's API. */
  canThink: boolean;
  mode: PermissionMode;
  /** How the session's commands run (whatever the permission mode). */
  sandbox: SandboxState;
}

export interface McpServer {
  name: string;
  state: McpServerState;
  transport: McpTransport;
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

export interface SessionNewParams {
  workspaceUri: string;
  model?: string;
  title?: string;
}

export interface SessionNewResult {
  model: ModelRef;
  thinking: ThinkingLevel;
  canThink: boolean;
  mode: PermissionMode;
  sandbox: SandboxState;
  sessionId: string;
  usage: UsageSnapshot;
  mcp: McpStatusParams;
}

export interface SessionListParams {
  workspaceUri: string;
}

export interface SessionSummary {
  sessionId: string;
  title: string | null;
  model: string | null;
  createdAt: string;
  updatedAt: string;
  entryCount: number;
  /** The first prompt (its first 200 characters): tells apart sessions with one title. */
  firstPrompt: string | null;
  promptCount: number;
}

export interface SessionListResult {
  sessions: SessionSummary[];
}

export interface SessionLoadParams {
  sessionId: string;
  /** Entries in the first page (default 100). */
  limit?: number;
}

export interface SessionForkParams {
  sessionId: string;
  /** Entries in the first page of the fork's transcript (default 100). */
  limit?: number;
}

export interface SessionRenameParams {
  sessionId: string;
  /** Kept on one line (each run of white space becomes a space), at most 1,000 characters. */
  title: string;
}

export interface SessionRenameResult {
  sessionId: string;
  /** The title as kept. */
  title: string;
}

export interface SessionDeleteParams {
  sessionId: string;
}

export interface RepairIssue {
  line: number;
  offset: number;
  reason: string;
  action: IssueAction;
}

/** What opening a damaged ledger repaired (docs/protocol.md). */
export interface LedgerRepair {
  message: string;
  keptEntries: number;
  issues: RepairIssue[];
  truncatedBytes: number;
  abortedToolCalls: string[];
}

export interface SessionLoadResult {
  model: ModelRef;
  thinking: ThinkingLevel;
  canThink: boolean;
  mode: PermissionMode;
  sandbox: SandboxState;
  sessionId: string;
  title: string | null;
  leafId: string | null;
  /** The latest page of the current branch, oldest first. */
  transcript: TranscriptItem[];
  /** Pass as `before` to agent/session/history for the page before; null: nothing older. */
  cursor: string | null;
  usage: UsageSnapshot;
  repair?: LedgerRepair;
  mcp: McpStatusParams;
  /** The pins in force. */
  pins: PinInfo[];
  /** The task's plan as the model last wrote it (empty: none). */
  plan: PlanEntry[];
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

export interface TurnError {
  code: string | null;
  message: string;
}

export interface TurnResult {
  turnId: string;
  stopReason: TurnStopReason;
  usage: UsageSnapshot;
  error?: TurnError;
}

/** The params of a request about one session and nothing else. */
export interface SessionParams {
  sessionId: string;
}

export type InterruptParams = SessionParams;

export type UsageParams = SessionParams;

export type EmptyResult = Record<string, never>;

export type InterruptResult = EmptyResult;

/**
 * `agent/tool/input`: what the user typed into a running command (the editor's terminal
 * of the session, with `tools.terminal.visible` on): `data` is written to the command's
 * standard input as UTF-8; `end` closes that input after it (Ctrl-D); `interrupt` sends
 * the command's processes SIGINT instead (Ctrl-C: the command stops, the turn goes on; `data`
 * is then not written). Input for a call that is not running, or with the setting off, is
 * ignored.
 */
export interface ToolInputParams {
  sessionId: string;
  toolCallId: string;
  data: string;
  end?: boolean;
  interrupt?: boolean;
}

/**
 * `agent/userIdle`: whether the user is away (the window lost focus); `cacheRetention:
 * "auto"` then keeps the prompt cache for the long retention.
 */
export interface UserIdleParams {
  idle: boolean;
}

export type UserIdleResult = EmptyResult;

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
  files: RestoredFile[];
  /** Files that could not be put back, and why. */
  problems?: string[];
}

export interface RewindPreviewParams {
  sessionId: string;
  entryId: string;
}

export interface PlannedFile {
  path: string;
  action: FileAction;
  /** Edited after the agent's change too: restoring discards that. */
  changedSince: boolean;
}

/** What a restore cannot put back: commands run since, files they (or someone) changed. */
export interface NotRestorable {
  commands: string[];
  files: string[];
  moreFiles: number;
}

/** What a rewind to an entry would do, before the user confirms. */
export interface RewindPreviewResult {
  entryId: string;
  /** When the entry is a prompt: the prompt that would come back to the input box. */
  prompt?: PromptBlock[];
  /** Files a restore would change. */
  files: PlannedFile[];
  notRestorable: NotRestorable;
}

export interface RewindChangesParams {
  sessionId: string;
  entryId: string;
}

/** A file the agent changed since an entry, as it was at that entry. */
export interface FileThen {
  path: string;
  /** False: it did not exist then (the agent made it since). */
  existed: boolean;
  /** Its content then, when it existed and is text of at most 1 MiB. */
  text?: string;
  /** Why `text` is left out though the file existed: "binary" or "over 1 MiB". */
  omitted?: string;
}

/**
 * What the agent changed since an entry, to show as a diff against the files now: the
 * files a restore would put back (`agent/rewind/preview`'s), each as it was then.
 */
export interface RewindChangesResult {
  entryId: string;
  files: FileThen[];
}

/** US dollars per million tokens. */
export interface ModelPricing {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

/** A model the picker offers (`agent/model/list`). */
export interface ModelChoice {
  id: string;
  name: string;
  contextWindow: number;
  vendor: string;
  maxOutput: number;
  pricing: ModelPricing;
  images: boolean;
  /** It takes a thinking level on the provider's API. */
  thinking: boolean;
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
  /**
   * Tokens at the start of the context that the new model's cache still holds (a switch
   * back within its cache lifetime): read, not written, at the next request.
   */
  warm: number;
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

export interface ModeSetParams {
  sessionId: string;
  mode: PermissionMode;
}

export type ModeSetResult = SessionState;

export interface ThinkingSetParams {
  sessionId: string;
  thinking: ThinkingLevel;
}

export interface ThinkingSetResult {
  thinking: ThinkingLevel;
  canThink: boolean;
  /** The ledger's modelChange entry that records it (null: already that level). */
  entryId: string | null;
  /**
   * As for a model switch, of the session's messages (the prefix Anthropic caches per
   * thinking setting).
   */
  cost: SwitchCost;
  /** The cost in words, for the transcript. */
  note: string;
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

export const ProblemSeverityValues = ['error', 'warning'] as const;
export type ProblemSeverity = (typeof ProblemSeverityValues)[number];

/** One of the editor's diagnostics (agent/problems.py). */
export interface Problem {
  /** 1-based. */
  line: number;
  severity: ProblemSeverity;
  message: string;
  /** The language server that reports it (Pylance, eslint, ...). */
  source?: string;
}

export interface ProblemsParams {
  sessionId: string;
  /** The file the agent wrote or edited, workspace-relative (as its tool call named it). */
  path: string;
  /** What the editor reports for it now that it did not before the agent's change. */
  problems: Problem[];
}

export interface CommandListParams {
  workspaceUri: string;
}

export const CommandOriginValues = ['user', 'workspace'] as const;
export type CommandOrigin = (typeof CommandOriginValues)[number];

export interface PromptCommandItem {
  /** Typed as `/name` at the start of a prompt (agent/prompt_commands.py). */
  name: string;
  description: string;
  /** What to type after the name ("" when the command takes no words). */
  hint: string;
  origin: CommandOrigin;
}

export interface CommandListResult {
  commands: PromptCommandItem[];
}

export type McpServersParams = SessionParams;

export type McpAcceptToolsParams = SessionParams;

export interface McpAcceptToolsResult {
  accepted: boolean;
  deferred: boolean;
  tokens: number;
}

export interface McpRestartParams {
  sessionId: string;
  name: string;
}

export type McpRestartResult = EmptyResult;

export type PinsListParams = SessionParams;

export interface PinsResult {
  /** The pins in force, oldest first. */
  pins: PinInfo[];
}

export interface PinsAddParams {
  sessionId: string;
  /** The rule or fact, at most 2,000 characters. */
  text: string;
  /** Default `rule`. */
  kind?: PinKind;
}

export interface PinsAddResult {
  pins: PinInfo[];
  /** The new pin. */
  pin: PinInfo;
}

export interface PinsRemoveParams {
  sessionId: string;
  /** A pin's id, or a start of it that only one pin's id has. */
  pinId: string;
}

export interface PinsRemoveResult {
  pins: PinInfo[];
  /** The pin removed. */
  pin: PinInfo;
}

export interface AgentUpdateParams {
  sessionId: string;
  turnId: string;
  seq: number;
  update: SessionUpdate;
}

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
  kind: OverflowKind;
  action: OverflowAction;
  message: string;
}

/** `agent/context`: the decision taken on the context before a model call, and why. */
export interface ContextDecisionParams {
  sessionId: string;
  turnId: string | null;
  action: ContextAction;
  reason: CompactionReason | 'oversized' | null;
  tokens: number;
  threshold: number;
  window: number;
}

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

export interface SelectedOption {
  selected: string;
  /** With a rejection: what the agent should do instead. */
  message?: string;
  /**
   * With an allowance of a file change: the file's content as the user revised it,
   * written instead of the proposal.
   */
  newText?: string;
}

export interface RequestPermissionResult {
  outcome: SelectedOption | 'cancelled';
}

/** The `agent` settings section (workspace/configuration or
 * initializationOptions.settings): agent_server/agent/settings.py's settings. */
export interface AgentSettings {
  /** The model provider: `sim` is the built-in simulator (no key, no network). */
  provider?: Provider;
  /** A model id from the registry (docs/providers.md) or the models file. */
  model?: string | null;
  /** API base URL: a proxy, a local OpenAI-compatible server (Ollama, vLLM, llama.cpp), or a running simulator. */
  baseUrl?: string | null;
  /** The environment variable the server reads the key from. Store the key itself with **Agent: Set API Key** (secret storage), never in settings. */
  apiKeyEnv?: string | null;
  /** A JSON or YAML file of extra models (window, max output, prices). */
  modelsFile?: string | null;
  /** The window of a `model` only the server at `baseUrl` knows (`openai-chat`, `openai-responses`). */
  contextWindow?: number | null;
  /** Prompt-cache retention: `short` is 5 minutes (30 on OpenAI from GPT-5.6), `long` 1 hour (24 on OpenAI, 12 from GPT-5.6 on the Responses API). */
  cacheRetention?: CacheRetentionSetting;
  /** How hard a model that can think does, before it answers (its thinking shows collapsed; it is billed as output). A session keeps the level it last switched to (**Agent: Thinking Level**, `agent/thinking/set`). On Anthropic a change re-reads the conversation without the prompt cache; the transcript says what it costs. */
  thinking?: ThinkingLevel;
  compaction?: {
    /** Compact the history automatically near the context window. */
    enabled?: boolean;
    /** Room kept free below the window. */
    reserveTokens?: number | null;
    /** Tokens of the most recent history a compaction keeps verbatim. */
    keepRecentTokens?: number;
    /** Recent answered turns kept verbatim when they fit that tail (a prompt not answered yet is kept beside them, with older finished turns while the tail holds them). */
    keepRecentTurns?: number;
    /** Model for summaries. */
    model?: string | null;
    /** When to compact: a share of the context window (`0.6`) or a number of tokens (`120000`). Never later than the window less the reserve (`1`: only near the window). `compaction.enabled: false` turns compaction off. */
    threshold?: number | null;
    hooks?: {
      /** Your shell commands run before each compaction, in the workspace folder, with the compaction (reason, tokens) as JSON on their input. One may add instructions for the summary (its output) or cancel (exit code 2, or `{"cancel": true, "reason": "..."}`). See docs/sessions.md. */
      before?: string[];
      /** Your shell commands run after each compaction, with the compaction and its summary as JSON on their input. See docs/sessions.md. */
      after?: string[];
      /** Seconds a compaction hook may run before it is stopped. */
      timeout?: number;
    };
    /** `cached`: the summary request shares the cached prefix; `fresh`: a separate prompt. */
    summary?: 'cached' | 'fresh';
    /** After a pause longer than the cache's lifetime, compact at once when past this share of the threshold (1: only at the threshold). */
    coldCacheShare?: number;
    /** Who writes a compaction's summary: `local` (agent-server) or `provider` (Anthropic's on-demand compaction, OpenAI's `/responses/compact`; agent-server elsewhere, with a notice). The same trigger, cut, ledger entry and events either way (docs/sessions.md). */
    engine?: CompactionEngine;
    /** Let the provider clear old tool results before the model reads them (Anthropic's context editing). Each clearing rewrites the prompt cache after it; a notice shows what it cost. */
    clearToolResults?: boolean;
  };
  permissions?: {
    /** When the agent asks before running a tool. */
    mode?: PermissionMode;
  };
  /** Folder for session ledgers: an absolute path, or one starting with `~` (a relative one is refused); never where the approvals of `.mcp.json` are kept (docs/mcp.md). */
  sessionsDir?: string | null;
  /** Model calls in one turn before it stops. */
  maxSteps?: number;
  /** Seconds before a shell command is killed. */
  bashTimeout?: number;
  tools?: {
    /** Whether shell commands run in the sandbox (Linux, bubblewrap): the workspace writable, the rest read-only, no network unless allowed. An approved command runs in it too, unless you choose "Allow outside the sandbox" for it. */
    sandbox?: SandboxMode;
    /** Let sandboxed shell commands use the network. */
    network?: boolean;
    env?: {
      /** Environment variables (names or `*` globs) shell commands receive although they look secret, e.g. `NPM_TOKEN`. Provider API keys are never passed. */
      pass?: string[];
    };
    /** Home-directory toolchains the sandbox shows, read-only (the rest of the home is an empty folder). */
    readPaths?: string[];
    limits?: {
      /** Processes at once, the command and all it starts (`0`: no limit). */
      processes?: number;
      /** Memory of a command's processes together, in MB (`0`: no limit). */
      memoryMB?: number | null;
      /** The largest file one of a command's processes may write, in MB (`0`: no limit). */
      fileSizeMB?: number;
      /** CPU seconds per process (`0`: none; the timeout bounds the time). */
      cpuSeconds?: number;
    };
    /** Offer the repo_map tool (Aider's repository map as a tool; needs `pip install 'agent-server[repomap]'`; docs/tools.md). */
    repoMap?: boolean;
    /** The budget of a map the model asks for without naming one. */
    repoMapTokens?: number;
    terminal?: {
      /** Show each shell command the agent runs, with its output as it comes, in a terminal of the session's own (in VS Code, named **Agent:** and the session's title), where what you type goes to the running command's input: Enter sends the line, Ctrl-D ends the input, Ctrl-C interrupts the command (the turn goes on). The command still runs in the server, in the sandbox. Off: commands get no input at all (an immediate end of input). */
      visible?: boolean;
    };
  };
  mcp?: {
    /** MCP servers by name, in the `mcpServers` shape of `.mcp.json`: `{"name": {"command", "args", "env"}}` or `{"name": {"type": "http", "url", "headers"}}`, with `trusted` and `disabled`; added to the workspace's `.mcp.json` and the user-level file. Keep secrets out: write `${NAME}` and store the value with **Agent: Set MCP Secret**. See docs/mcp.md. */
    servers?: Record<string, unknown>;
    /** The user-level MCP file (`""` for none). */
    userFile?: string | null;
    /** Whether to read the workspace's `.mcp.json`. */
    workspaceFile?: boolean;
    /** Seconds an MCP server has to start and list its tools. */
    startupTimeout?: number;
    /** Seconds a session's first request waits for MCP servers still starting; one ready later is offered as a change of the tools (`/tools`), so a slow server does not hold the first prompt. */
    firstRequestWait?: number;
    /** Seconds one MCP tool call may take (a server's own `timeout` overrides it). */
    toolTimeout?: number;
    /** The most one message of a stdio MCP server may have, in MB; a larger one is refused. */
    maxResultMB?: number;
  };
}

export interface ClientCapabilities {
  requestPermission: boolean;
}

export interface AgentInitializationOptions {
  settings: AgentSettings;
  clientCapabilities: ClientCapabilities;
}

export const SenderValues = ['client', 'server'] as const;
export type Sender = (typeof SenderValues)[number];

/** Error codes of docs/protocol.md. */
export const ErrorCodes = {
  InvalidParams: -32602,
  RequestCancelled: -32800,
  UnknownSession: -33001,
  SessionBusy: -33002,
  UnknownWorkspace: -33003,
  UnknownEntry: -33004,
  SessionLocked: -33005,
  SessionDamaged: -33006,
  ConfigurationError: -33010,
} as const;

/** Method names, one place. */
export const Methods = {
  sessionNew: 'agent/session/new',
  sessionList: 'agent/session/list',
  sessionLoad: 'agent/session/load',
  sessionFork: 'agent/session/fork',
  sessionRename: 'agent/session/rename',
  sessionDelete: 'agent/session/delete',
  sessionHistory: 'agent/session/history',
  turn: 'agent/turn',
  interrupt: 'agent/interrupt',
  toolInput: 'agent/tool/input',
  compact: 'agent/compact',
  rewind: 'agent/rewind',
  rewindPreview: 'agent/rewind/preview',
  rewindChanges: 'agent/rewind/changes',
  usage: 'agent/usage',
  userIdle: 'agent/userIdle',
  modelList: 'agent/model/list',
  modelSet: 'agent/model/set',
  modeSet: 'agent/mode/set',
  thinkingSet: 'agent/thinking/set',
  mentionComplete: 'agent/mention/complete',
  problems: 'agent/problems',
  commandList: 'agent/command/list',
  mcpServers: 'agent/mcp/servers',
  mcpAcceptTools: 'agent/mcp/acceptTools',
  mcpRestart: 'agent/mcp/restart',
  pinsList: 'agent/pins/list',
  pinsAdd: 'agent/pins/add',
  pinsRemove: 'agent/pins/remove',
  update: 'agent/update',
  compaction: 'agent/compaction',
  overflow: 'agent/overflow',
  context: 'agent/context',
  mcpStatus: 'agent/mcp/status',
  requestPermission: 'agent/requestPermission',
} as const;

/** The requests the client sends (their params and result), by their key in `Methods`. */
export interface ClientRequests {
  sessionNew: { params: SessionNewParams; result: SessionNewResult };
  sessionList: { params: SessionListParams; result: SessionListResult };
  sessionLoad: { params: SessionLoadParams; result: SessionLoadResult };
  sessionFork: { params: SessionForkParams; result: SessionLoadResult };
  sessionRename: { params: SessionRenameParams; result: SessionRenameResult };
  sessionDelete: { params: SessionDeleteParams; result: EmptyResult };
  sessionHistory: { params: SessionHistoryParams; result: SessionHistoryResult };
  turn: { params: TurnParams; result: TurnResult };
  interrupt: { params: SessionParams; result: EmptyResult };
  compact: { params: CompactParams; result: CompactResult };
  rewind: { params: RewindParams; result: RewindResult };
  rewindPreview: { params: RewindPreviewParams; result: RewindPreviewResult };
  rewindChanges: { params: RewindChangesParams; result: RewindChangesResult };
  usage: { params: SessionParams; result: UsageSnapshot };
  userIdle: { params: UserIdleParams; result: EmptyResult };
  modelList: { params: ModelListParams; result: ModelListResult };
  modelSet: { params: ModelSetParams; result: ModelSetResult };
  modeSet: { params: ModeSetParams; result: SessionState };
  thinkingSet: { params: ThinkingSetParams; result: ThinkingSetResult };
  mentionComplete: { params: MentionCompleteParams; result: MentionCompleteResult };
  problems: { params: ProblemsParams; result: EmptyResult };
  commandList: { params: CommandListParams; result: CommandListResult };
  mcpServers: { params: SessionParams; result: McpStatusParams };
  mcpAcceptTools: { params: SessionParams; result: McpAcceptToolsResult };
  mcpRestart: { params: McpRestartParams; result: EmptyResult };
  pinsList: { params: SessionParams; result: PinsResult };
  pinsAdd: { params: PinsAddParams; result: PinsAddResult };
  pinsRemove: { params: PinsRemoveParams; result: PinsRemoveResult };
}

/** The notifications the client sends (their params), by their key in `Methods`. */
export interface ClientNotifications {
  toolInput: ToolInputParams;
}

/** The notifications the server sends (their params), by their key in `Methods`. */
export interface ServerNotifications {
  update: AgentUpdateParams;
  usage: UsageSnapshot;
  compaction: CompactionParams;
  overflow: OverflowParams;
  context: ContextDecisionParams;
  mcpStatus: McpStatusParams;
}

/** The requests the server sends (their params and the client's answer), by their key in `Methods`. */
export interface ServerRequests {
  requestPermission: { params: RequestPermissionParams; result: RequestPermissionResult };
}
