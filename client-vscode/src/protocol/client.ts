/**
 * A typed client for the agent-server protocol over any JSON-RPC connection.
 *
 * It needs only `sendRequest`, `sendNotification`, `onNotification` and `onRequest` by method
 * name, which both vscode-languageclient's `LanguageClient` and vscode-jsonrpc's
 * `MessageConnection` provide. It does not import the `vscode` API, so the extension and the
 * protocol end-to-end test (Node, raw vscode-jsonrpc) share it.
 */
import {
  Methods,
  type AgentInitializationOptions,
  type AgentSettings,
  type AgentUpdateParams,
  type CommandListParams,
  type CommandListResult,
  type CompactParams,
  type CompactResult,
  type CompactionParams,
  type InterruptParams,
  type InterruptResult,
  type MentionCompleteParams,
  type MentionCompleteResult,
  type ModeSetParams,
  type ModelListParams,
  type ModelListResult,
  type ModelSetParams,
  type ModelSetResult,
  type RewindPreviewParams,
  type RewindPreviewResult,
  type SessionState,
  type ThinkingSetParams,
  type ThinkingSetResult,
  type McpAcceptToolsResult,
  type McpStatusParams,
  type UserIdleParams,
  type UserIdleResult,
  type OverflowParams,
  type RequestPermissionParams,
  type RequestPermissionResult,
  type RewindParams,
  type RewindResult,
  type SessionListParams,
  type SessionListResult,
  type SessionForkParams,
  type SessionLoadParams,
  type SessionHistoryParams,
  type SessionHistoryResult,
  type SessionLoadResult,
  type SessionNewParams,
  type SessionNewResult,
  type TurnParams,
  type TurnResult,
  type UsageNotificationParams,
  type UsageParams,
  type UsageSnapshot,
  PinsAddParams,
  PinsAddResult,
  PinsRemoveParams,
  PinsRemoveResult,
} from './types';

export interface DisposableLike {
  dispose(): void;
}

/** Structurally both vscode's and vscode-jsonrpc's CancellationToken. */
export interface CancellationTokenLike {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: (e: unknown) => unknown): DisposableLike;
}

/**
 * The part of a JSON-RPC connection this client uses. vscode-languageclient's `LanguageClient`
 * and vscode-jsonrpc's `MessageConnection` both satisfy it as they are (their handler types
 * take `any` params, hence the `any` here).
 */
export interface RpcConnection {
  sendRequest<R>(method: string, params: unknown, token?: CancellationTokenLike): Promise<R>;
  sendNotification(method: string, params?: unknown): Promise<void> | void;
  onNotification(method: string, handler: (...params: any[]) => void): DisposableLike;
  onRequest(method: string, handler: (...params: any[]) => unknown): DisposableLike;
}

export type PermissionHandler = (
  params: RequestPermissionParams,
  token: CancellationTokenLike,
) => Promise<RequestPermissionResult> | RequestPermissionResult;

/** Error thrown by a request; `code` is the JSON-RPC error code (see `ErrorCodes`). */
export interface RpcError {
  code: number;
  message: string;
  data?: unknown;
}

export function isRpcError(error: unknown): error is RpcError {
  return (
    typeof error === 'object' &&
    error !== null &&
    typeof (error as { code?: unknown }).code === 'number' &&
    typeof (error as { message?: unknown }).message === 'string'
  );
}

export class AgentClient {
  constructor(private readonly connection: RpcConnection) {}

  // ---- requests, client to server --------------------------------------------------------

  newSession(params: SessionNewParams): Promise<SessionNewResult> {
    return this.connection.sendRequest(Methods.sessionNew, params);
  }

  listSessions(params: SessionListParams): Promise<SessionListResult> {
    return this.connection.sendRequest(Methods.sessionList, params);
  }

  loadSession(params: SessionLoadParams): Promise<SessionLoadResult> {
    return this.connection.sendRequest(Methods.sessionLoad, params);
  }

  forkSession(params: SessionForkParams): Promise<SessionLoadResult> {
    return this.connection.sendRequest(Methods.sessionFork, params);
  }

  sessionHistory(params: SessionHistoryParams): Promise<SessionHistoryResult> {
    return this.connection.sendRequest(Methods.sessionHistory, params);
  }

  /** Long-lived: resolves when the turn ends. Cancelling `token` sends `$/cancelRequest`. */
  turn(params: TurnParams, token?: CancellationTokenLike): Promise<TurnResult> {
    return token
      ? this.connection.sendRequest(Methods.turn, params, token)
      : this.connection.sendRequest(Methods.turn, params);
  }

  interrupt(params: InterruptParams): Promise<InterruptResult> {
    return this.connection.sendRequest(Methods.interrupt, params);
  }

  userIdle(params: UserIdleParams): Promise<UserIdleResult> {
    return this.connection.sendRequest(Methods.userIdle, params);
  }

  compact(params: CompactParams): Promise<CompactResult> {
    return this.connection.sendRequest(Methods.compact, params);
  }

  rewind(params: RewindParams): Promise<RewindResult> {
    return this.connection.sendRequest(Methods.rewind, params);
  }

  rewindPreview(params: RewindPreviewParams): Promise<RewindPreviewResult> {
    return this.connection.sendRequest(Methods.rewindPreview, params);
  }

  usage(params: UsageParams): Promise<UsageSnapshot> {
    return this.connection.sendRequest(Methods.usage, params);
  }

  listModels(params: ModelListParams): Promise<ModelListResult> {
    return this.connection.sendRequest(Methods.modelList, params);
  }

  setModel(params: ModelSetParams): Promise<ModelSetResult> {
    return this.connection.sendRequest(Methods.modelSet, params);
  }

  setMode(params: ModeSetParams): Promise<SessionState> {
    return this.connection.sendRequest(Methods.modeSet, params);
  }

  setThinking(params: ThinkingSetParams): Promise<ThinkingSetResult> {
    return this.connection.sendRequest(Methods.thinkingSet, params);
  }

  completeMention(params: MentionCompleteParams): Promise<MentionCompleteResult> {
    return this.connection.sendRequest(Methods.mentionComplete, params);
  }

  listCommands(params: CommandListParams): Promise<CommandListResult> {
    return this.connection.sendRequest(Methods.commandList, params);
  }

  mcpServers(params: { sessionId: string }): Promise<McpStatusParams> {
    return this.connection.sendRequest(Methods.mcpServers, params);
  }

  /** Take in the waiting change of the MCP tool list (the next request re-reads the prefix). */
  acceptTools(params: { sessionId: string }): Promise<McpAcceptToolsResult> {
    return this.connection.sendRequest(Methods.mcpAcceptTools, params);
  }

  restartMcpServer(params: { sessionId: string; name: string }): Promise<Record<string, never>> {
    return this.connection.sendRequest(Methods.mcpRestart, params);
  }

  /** Pin a rule or a fact for the session (carried verbatim across every compaction). */
  addPin(params: PinsAddParams): Promise<PinsAddResult> {
    return this.connection.sendRequest(Methods.pinsAdd, params);
  }

  removePin(params: PinsRemoveParams): Promise<PinsRemoveResult> {
    return this.connection.sendRequest(Methods.pinsRemove, params);
  }

  // ---- notifications, server to client ---------------------------------------------------

  onUpdate(handler: (params: AgentUpdateParams) => void): DisposableLike {
    return this.connection.onNotification(Methods.update, handler);
  }

  onUsage(handler: (params: UsageNotificationParams) => void): DisposableLike {
    return this.connection.onNotification(Methods.usage, handler);
  }

  onCompaction(handler: (params: CompactionParams) => void): DisposableLike {
    return this.connection.onNotification(Methods.compaction, handler);
  }

  onOverflow(handler: (params: OverflowParams) => void): DisposableLike {
    return this.connection.onNotification(Methods.overflow, handler);
  }

  onMcpStatus(handler: (params: McpStatusParams) => void): DisposableLike {
    return this.connection.onNotification(Methods.mcpStatus, handler);
  }

  // ---- requests, server to client --------------------------------------------------------

  /**
   * Answers `agent/requestPermission`. Declare support with
   * `initializationOptions.clientCapabilities.requestPermission = true`.
   */
  onRequestPermission(handler: PermissionHandler): DisposableLike {
    return this.connection.onRequest(
      Methods.requestPermission,
      (params: RequestPermissionParams, token: CancellationTokenLike) => handler(params, token),
    );
  }
}

/** The initializationOptions this client sends (the extension and the tests). */
export function initializationOptions(settings: AgentSettings): AgentInitializationOptions {
  return { settings, clientCapabilities: { requestPermission: true } };
}

/** A cancellation source whose token satisfies both vscode's and vscode-jsonrpc's shape. */
export class CancellationSource {
  private cancelled = false;
  private readonly listeners = new Set<(e: unknown) => unknown>();
  readonly token: CancellationTokenLike;

  constructor() {
    const listeners = this.listeners;
    const isCancelled = (): boolean => this.cancelled;
    this.token = {
      get isCancellationRequested(): boolean {
        return isCancelled();
      },
      onCancellationRequested(listener: (e: unknown) => unknown): DisposableLike {
        if (isCancelled()) {
          listener(undefined);
          return { dispose: () => undefined };
        }
        listeners.add(listener);
        return { dispose: () => void listeners.delete(listener) };
      },
    };
  }

  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    for (const listener of [...this.listeners]) listener(undefined);
    this.listeners.clear();
  }
}
