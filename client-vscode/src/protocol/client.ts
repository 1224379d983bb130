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
  type ClientNotifications,
  type ClientRequests,
  type RequestPermissionParams,
  type RequestPermissionResult,
  type ServerNotifications,
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

  // ---- the method table (types.ts, generated from agent_server/protocol.py) -----------------

  /**
   * A request of the method table (`ClientRequests`), by its key in `Methods`. `token`:
   * cancelling it sends `$/cancelRequest` (a long-lived turn resolves when the turn ends).
   */
  request<K extends keyof ClientRequests>(
    method: K,
    params: ClientRequests[K]['params'],
    token?: CancellationTokenLike,
  ): Promise<ClientRequests[K]['result']> {
    return token
      ? this.connection.sendRequest(Methods[method], params, token)
      : this.connection.sendRequest(Methods[method], params);
  }

  /** A notification to the server (`ClientNotifications`), by its key in `Methods`: no
   * answer comes. */
  notify<K extends keyof ClientNotifications>(method: K, params: ClientNotifications[K]): void {
    void this.connection.sendNotification(Methods[method], params);
  }

  /** A notification of the method table (`ServerNotifications`), by its key in `Methods`. */
  on<K extends keyof ServerNotifications>(
    method: K,
    handler: (params: ServerNotifications[K]) => void,
  ): DisposableLike {
    return this.connection.onNotification(Methods[method], handler);
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
