/**
 * The session controller: what the chat view's buttons do, in protocol calls, and the protocol
 * events turned into reducer actions. It owns the current session and the host's copy of the
 * view state. No `vscode` import: unit tests drive it over a fake connection.
 */
import {
  AgentClient,
  CancellationSource,
  isRpcError,
  type CancellationTokenLike,
  type DisposableLike,
} from './protocol/client';
import {
  ErrorCodes,
  type AgentUpdateParams,
  type ImageContent,
  type MentionItem,
  type PermissionMode,
  type Problem,
  type PromptBlock,
  type RequestPermissionParams,
  type RequestPermissionResult,
  type RestoreChoice,
  type RewindChangesResult,
  type ThinkingLevel,
  type ToolInputParams,
} from './protocol/types';
import { initialState, reduce, type Action, type ViewState } from './state/reducer';

/** A prompt that pins instead (`/remember [fact:] text`). */
const REMEMBER = /^\/remember(?:\s+([\s\S]*))?$/i;

/** Entries per page of older history. */
const HISTORY_PAGE = 100;

export interface ControllerHooks {
  /** Every action, in order, right after the host state has applied it. */
  publish(actions: Action[]): void;
  /** A configuration error from the server (e.g. a missing API key): the host may offer a fix. */
  onConfigurationError?(message: string): void;
  /** Where the editor keeps what it must remember across reloads (the workspace's memento):
   * the permission mode picked for each session (a new session starts with the setting's). */
  memory?: Memory;
  /** A permission question was asked (the host may open its file change for review). */
  onPermissionAsked?(requestId: string, params: RequestPermissionParams): void;
  /** A permission question was answered or withdrawn (the host closes its diff review). */
  onPermissionSettled?(requestId: string): void;
  /** A line for the log: how a session was reopened after a (re)start, where a prompt went. */
  trace?(message: string): void;
  /** Every agent/update, as it comes (the host watches the agent's edits for problems). */
  onUpdate?(params: AgentUpdateParams): void;
}

/** vscode.Memento's get/update, for the controller's own keys. */
export interface Memory {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): Thenable<void> | Promise<void> | void;
}

/** What the user can add to an option: words for the agent (a rejection), or the change as
 * revised in the diff editor (an allowance). */
export interface PermissionExtra {
  message?: string;
  newText?: string;
}

const MODE_KEY = 'agentServer.mode';

interface PermissionWaiter {
  resolve(result: RequestPermissionResult): void;
  cancelListener: DisposableLike;
}

export class SessionController {
  private _state: ViewState = initialState();
  private client: AgentClient | undefined;
  private userIdle = false;
  private subscriptions: DisposableLike[] = [];
  private turnSource: CancellationSource | undefined;
  /** Counts the reopenings after a (re)start: only the latest one ends the restoring. */
  private reopenAttempt = 0;
  private readonly permissionWaiters = new Map<string, PermissionWaiter>();
  private permissionCounter = 0;
  /** Picked before a session existed (or last picked): what the next new session gets. */
  private preferredModel: string | undefined;
  private preferredMode: PermissionMode | undefined;
  private preferredThinking: ThinkingLevel | undefined;
  /** The mention query asked for last: the only one whose completions are shown. */
  private mentionQuery: string | undefined;

  constructor(private readonly hooks: ControllerHooks) {}

  get state(): ViewState {
    return this._state;
  }

  get connected(): boolean {
    return this.client !== undefined;
  }

  dispatch(...actions: Action[]): void {
    for (const action of actions) this._state = reduce(this._state, action);
    this.hooks.publish(actions);
  }

  // ---- connection ------------------------------------------------------------------------

  /** Listens to a (started) client's notifications and permission requests. */
  attach(client: AgentClient): void {
    this.detach();
    this.client = client;
    this.subscriptions = [
      client.on('update', (params) => {
        this.dispatch({ type: 'update', params });
        this.hooks.onUpdate?.(params);
      }),
      client.on('usage', (params) => this.dispatch({ type: 'usage', params })),
      client.on('compaction', (params) => this.dispatch({ type: 'compaction', params })),
      client.on('overflow', (params) => this.dispatch({ type: 'overflow', params })),
      client.on('mcpStatus', (params) => this.dispatch({ type: 'mcpStatus', params })),
      client.onRequestPermission((params, token) => this.askPermission(params, token)),
    ];
    if (this.userIdle) void this.sendUserIdle();
  }

  /** Problems the editor reports that an edit of the agent's introduced: for the model. */
  async reportProblems(sessionId: string, path: string, problems: Problem[]): Promise<void> {
    try {
      await this.client?.request('problems', { sessionId, path, problems });
    } catch (error) {
      this.hooks.trace?.(`problems of ${path} not told: ${String(error)}`);
    }
  }

  /** The user left or came back (the window's focus): told to the server, now and on attach. */
  setUserIdle(idle: boolean): void {
    if (idle === this.userIdle) return;
    this.userIdle = idle;
    void this.sendUserIdle();
  }

  private async sendUserIdle(): Promise<void> {
    try {
      await this.client?.request('userIdle', { idle: this.userIdle });
    } catch {
      // An older server without agent/userIdle: the cache keeps its configured retention.
    }
  }

  /** The server went away: forget its handlers and cancel what waits on it. */
  detach(): void {
    for (const s of this.subscriptions) s.dispose();
    this.subscriptions = [];
    for (const requestId of [...this.permissionWaiters.keys()]) this.settlePermission(requestId, 'cancelled');
    this.turnSource = undefined;
    this.client = undefined;
  }

  setWorkspace(workspaceUri: string | undefined): void {
    if (workspaceUri !== this._state.workspaceUri) this.dispatch({ type: 'workspace', workspaceUri });
  }

  // ---- sessions --------------------------------------------------------------------------

  async refreshSessions(): Promise<void> {
    const client = this.client;
    const workspaceUri = this._state.workspaceUri;
    if (!client || !workspaceUri) return;
    try {
      const { sessions } = await client.request('sessionList', { workspaceUri });
      this.dispatch({ type: 'sessionsListed', sessions });
    } catch (error) {
      this.fail('Could not list sessions', error);
    }
  }

  /** Title a session of the workspace (the server keeps it on one line). */
  async renameSession(sessionId: string, title: string): Promise<boolean> {
    const client = this.client;
    if (!client) {
      this.notConnected();
      return false;
    }
    try {
      const renamed = await client.request('sessionRename', { sessionId, title });
      this.dispatch({ type: 'sessionRenamed', sessionId, title: renamed.title });
      return true;
    } catch (error) {
      this.fail('Could not rename the session', error);
      return false;
    }
  }

  /** Remove a session for good; the view lets it go if it is the one open. */
  async deleteSession(sessionId: string): Promise<boolean> {
    const client = this.client;
    if (!client) {
      this.notConnected();
      return false;
    }
    try {
      await client.request('sessionDelete', { sessionId });
      if (sessionId === this._state.sessionId) this.dispatch({ type: 'sessionForgotten' });
      await this.refreshSessions();
      return true;
    } catch (error) {
      this.fail('Could not delete the session', error);
      return false;
    }
  }

  /** After a (re)start: list the sessions and reopen the current one, or the newest. A prompt
   * typed meanwhile waits for it (it is not sent to a new, empty session). */
  async openInitialSession(): Promise<void> {
    const client = this.client;
    const workspaceUri = this._state.workspaceUri;
    if (!client || !workspaceUri) return void this.trace(`No session to reopen: ${client ? 'no folder open' : 'no server'}`);
    const attempt = ++this.reopenAttempt;
    this.dispatch({ type: 'restoring', restoring: true });
    let reopened = false;
    try {
      reopened = await this.reopen(client, workspaceUri);
    } finally {
      // After a restart of the server meanwhile, the later reopening owns the state.
      if (attempt === this.reopenAttempt) {
        this.dispatch({ type: 'restoring', restoring: false });
        const queued = this._state.queue.length;
        this.trace(
          `Reopening ${reopened ? `done (session ${this._state.sessionId ?? 'none'})` : 'failed'}` +
            (queued ? `; ${queued} prompt(s) typed meanwhile ${reopened ? 'go to it' : 'wait'}` : ''),
        );
        // A prompt typed meanwhile was meant for the session reopening: when it could not
        // be reopened, the prompt waits for the user rather than go to a new session.
        if (reopened) void this.sendQueued();
        else if (queued > 0) {
          this.dispatch({ type: 'notice', level: 'warning', message: 'Your prompt is waiting: "Send now" sends it to a new session.' });
        }
      }
    }
  }

  /** Whether the session to continue is open (or there was none to open). */
  private async reopen(client: AgentClient, workspaceUri: string): Promise<boolean> {
    try {
      const { sessions } = await client.request('sessionList', { workspaceUri });
      this.dispatch({ type: 'sessionsListed', sessions });
      const current = this._state.sessionId;
      const target = sessions.find((s) => s.sessionId === current) ?? sessions[0];
      this.trace(`Reopening: ${sessions.length} session(s) in ${workspaceUri}; ${target ? `loading ${target.sessionId}` : 'none to load'}`);
      if (!target && current) {
        // Not where this server keeps sessions (another sessions folder since a restart):
        // a prompt would name a session it does not know; it starts one there instead.
        this.trace(`Session ${current} is not among this server's sessions: the view lets it go`);
        this.dispatch({ type: 'sessionForgotten' });
      }
      // The picker lists the models before any session exists, too.
      if (!target) {
        await this.listModels();
        return this.client === client;
      }
      return (await this.loadSession(target.sessionId, { waitForLock: true })) && this.client === client;
    } catch (error) {
      // A server stopped meanwhile (a restart) is no failure: the next one reopens.
      if (this.client === client) this.fail('Could not open the sessions', error);
      return false;
    }
  }

  async newSession(): Promise<string | undefined> {
    const client = this.client;
    const workspaceUri = this._state.workspaceUri;
    if (!client) return this.notConnected();
    if (!workspaceUri) {
      this.dispatch({ type: 'notice', level: 'warning', message: 'Open a folder first: sessions live in a workspace folder.' });
      return undefined;
    }
    try {
      const sessionId = await this.startSession(workspaceUri);
      void this.refreshSessions();
      return sessionId;
    } catch (error) {
      this.fail('Could not create a session', error);
      return undefined;
    }
  }

  /** A new session, with the model and mode picked for it (if any). */
  private async startSession(workspaceUri: string): Promise<string> {
    const client = this.client as AgentClient;
    const result = await client.request('sessionNew', 
      this.preferredModel ? { workspaceUri, model: this.preferredModel } : { workspaceUri },
    );
    let { mode, sandbox, thinking } = result;
    if (this.preferredMode && this.preferredMode !== mode) {
      const state = await client.request('modeSet', { sessionId: result.sessionId, mode: this.preferredMode });
      mode = state.mode ?? mode;
      sandbox = state.sandbox ?? sandbox;
      if (mode) this.remember(result.sessionId, mode);
    }
    if (this.preferredThinking && this.preferredThinking !== thinking) {
      thinking = (await client.request('thinkingSet', { sessionId: result.sessionId, thinking: this.preferredThinking })).thinking;
    }
    this.dispatch({
      type: 'sessionStarted',
      sessionId: result.sessionId,
      usage: result.usage,
      model: result.model,
      mode,
      sandbox,
      mcp: result.mcp,
      thinking,
      canThink: result.canThink,
    });
    void this.listModels();
    return result.sessionId;
  }

  /** Opens `sessionId`. `waitForLock`: after a (re)start, the server of the window before
   * may still hold the session while it exits: the load is tried again for a while. */
  async loadSession(sessionId: string, { waitForLock = false } = {}): Promise<boolean> {
    const client = this.client;
    if (!client) {
      this.notConnected();
      return false;
    }
    try {
      const result = await loadWaitingForLock(client, sessionId, waitForLock ? LOCK_WAIT_MS : 0, (error) =>
        this.trace(`Session ${sessionId} is still held (${describeError(error)}): waiting for it`),
      );
      this.dispatch({ type: 'sessionLoaded', result });
      void this.listModels();
      // The mode picked for this session holds across reloads of the window (a new server
      // starts each session in the settings' mode).
      const remembered = this.hooks.memory?.get<PermissionMode>(`${MODE_KEY}:${sessionId}`);
      if (remembered && result.mode && remembered !== result.mode && this._state.sessionId === sessionId) {
        this.trace(`Session ${sessionId}: its mode ${remembered} again (the server started it in ${result.mode})`);
        await this.setMode(remembered);
      }
      return true;
    } catch (error) {
      if (this.client === client) this.fail('Could not load the session', error);
      return false;
    }
  }

  /** The page of history before the first item shown (when there is one, one at a time). */
  async loadOlder(): Promise<void> {
    const client = this.client;
    const { sessionId, older } = this._state;
    if (!client || !sessionId || !older.cursor || older.loading) return;
    this.dispatch({ type: 'olderRequested', sessionId });
    try {
      const result = await client.request('sessionHistory', { sessionId, before: older.cursor, limit: HISTORY_PAGE });
      this.dispatch({ type: 'olderLoaded', result });
    } catch (error) {
      this.dispatch({ type: 'olderFailed', sessionId, message: `Could not load earlier messages: ${describeError(error)}` });
    }
  }

  // ---- turns -----------------------------------------------------------------------------

  /** Sends a prompt: its text (with any @-mentions, which the server attaches) and the
   * images pasted or dropped with it. */
  async send(text: string, images: readonly ImageContent[] = []): Promise<void> {
    const typed = text.trim();
    if (!typed && images.length === 0) return;
    // `/remember [fact:] text` pins for the session, as in the terminal and over ACP: it is
    // not a prompt for the model, and it applies at once, even during a turn.
    const pin = REMEMBER.exec(typed);
    if (pin && images.length === 0 && !this._state.restoring) return this.rememberTyped(pin[1] ?? '');
    if (this._state.turn.status !== 'idle' || this._state.restoring) {
      // Typed ahead: it goes once the turn (or the reopening session) is done.
      if (this._state.restoring) this.trace('A prompt typed while the session reopens: it waits for it');
      this.dispatch({ type: 'promptQueued', text: typed, images: [...images] });
      return;
    }
    const client = this.client;
    if (!client) return void this.notConnected();
    if (!this._state.sessionId) this.trace('A prompt with no session open: it starts a new session');
    const prompt: string | PromptBlock[] = images.length
      ? [...(typed ? [{ type: 'text' as const, text: typed }] : []), ...images]
      : typed;
    // The prompt shows at once, and stays (marked "not sent") if it never gets to a session.
    this.dispatch({ type: 'promptSent', text: typed, images: [...images] });
    let sessionId = this._state.sessionId;
    if (!sessionId) {
      const workspaceUri = this._state.workspaceUri;
      if (!workspaceUri) {
        this.dispatch({ type: 'turnFailed', message: 'Open a folder first: sessions live in a workspace folder.' });
        return;
      }
      try {
        sessionId = await this.startSession(workspaceUri);
      } catch (error) {
        this.turnFailed(error);
        return;
      }
    }
    const source = new CancellationSource();
    this.turnSource = source;
    let finished = false;
    try {
      const result = await client.request('turn', { sessionId, prompt }, source.token);
      if (sessionId === this._state.sessionId) this.dispatch({ type: 'turnEnded', result });
      finished = result.stopReason === 'end_turn';
    } catch (error) {
      if (sessionId === this._state.sessionId) {
        if (isRpcError(error) && error.code === ErrorCodes.RequestCancelled) {
          this.dispatch({ type: 'turnEnded', result: { stopReason: 'cancelled' } });
        } else {
          this.turnFailed(error);
        }
      }
    } finally {
      if (this.turnSource === source) this.turnSource = undefined;
      void this.refreshSessions();
    }
    // What was typed ahead goes next, after a turn that finished; after a stop or an error
    // it waits for the user (Send now, or remove it).
    if (finished) await this.sendQueued();
  }

  /** Send the first prompt typed ahead (or the one `id` names), when nothing runs. */
  async sendQueued(id?: string): Promise<void> {
    const { queue, turn, restoring } = this._state;
    const next = id ? queue.find((q) => q.id === id) : queue[0];
    if (!next || turn.status !== 'idle' || restoring || !this.client) return;
    this.dispatch({ type: 'queueRemoved', id: next.id });
    await this.send(next.text, next.images);
  }

  removeQueued(id: string): void {
    this.dispatch({ type: 'queueRemoved', id });
  }

  private turnFailed(error: unknown): void {
    const configuration = isRpcError(error) && error.code === ErrorCodes.ConfigurationError;
    this.dispatch({ type: 'turnFailed', message: describeError(error), configuration });
    if (configuration) this.hooks.onConfigurationError?.(error.message);
  }

  dismissProblem(): void {
    this.dispatch({ type: 'problemDismissed' });
  }

  /** Stop the running turn: `agent/interrupt`, and `$/cancelRequest` if that fails. */
  async stop(): Promise<void> {
    const client = this.client;
    const sessionId = this._state.sessionId;
    if (!client || !sessionId || this._state.turn.status !== 'running') return;
    this.dispatch({ type: 'stopRequested' });
    try {
      await client.request('interrupt', { sessionId });
    } catch {
      this.turnSource?.cancel();
    }
  }

  /** What the user typed into a running command, or Ctrl-C (its terminal): no answer comes. */
  toolInput(params: ToolInputParams): void {
    this.client?.notify('toolInput', params);
  }

  async compact(instructions?: string): Promise<void> {
    const client = this.client;
    const sessionId = this._state.sessionId;
    if (!client) return void this.notConnected();
    if (!sessionId || this._state.compacting) return;
    this.dispatch({ type: 'compactRequested' });
    try {
      const text = instructions?.trim();
      const result = await client.request('compact', text ? { sessionId, instructions: text } : { sessionId });
      this.dispatch({ type: 'compactFinished', result });
      // The usage after compaction comes as agent/usage; ask in case it raced the answer.
      const usage = await client.request('usage', { sessionId }).catch(() => undefined);
      if (usage) this.dispatch({ type: 'usage', params: usage });
    } catch (error) {
      this.dispatch({ type: 'compactFailed', message: `Compaction failed: ${describeError(error)}` });
    }
  }

  /** Asks what a rewind to `entryId` would change (files to restore, what cannot be), for the
   * user to choose and confirm. */
  async previewRewind(entryId: string): Promise<void> {
    const client = this.client;
    const sessionId = this._state.sessionId;
    if (!client) return void this.notConnected();
    if (!sessionId || this._state.turn.status !== 'idle') return;
    this.dispatch({ type: 'rewindRequested', entryId });
    try {
      const preview = await client.request('rewindPreview', { sessionId, entryId });
      this.dispatch({ type: 'rewindPreviewed', preview });
    } catch (error) {
      this.dispatch({ type: 'rewindFailed', message: `Could not rewind: ${describeError(error)}` });
    }
  }

  /** The files the agent changed since `entryId`, as they were then (for a diff against now);
   * undefined, with the reason shown, when they cannot be had. */
  async changesSince(entryId: string): Promise<RewindChangesResult | undefined> {
    const client = this.client;
    const sessionId = this._state.sessionId;
    if (!client) return void this.notConnected();
    if (!sessionId) return undefined;
    try {
      return await client.request('rewindChanges', { sessionId, entryId });
    } catch (error) {
      // The rewind's choices stay open: only the diff could not be had.
      this.dispatch({ type: 'notice', level: 'error', message: `Could not show the changes: ${describeError(error)}` });
      return undefined;
    }
  }

  cancelRewind(): void {
    this.dispatch({ type: 'rewindCancelled' });
  }

  /** Go back to an earlier point: the conversation, the files, or both. The transcript is
   * reloaded to show the branch, and a rewound prompt comes back to the input box. */
  async rewind(entryId: string, restore: RestoreChoice = 'conversation'): Promise<void> {
    const client = this.client;
    const sessionId = this._state.sessionId;
    if (!client) return void this.notConnected();
    if (!sessionId || this._state.turn.status !== 'idle') return;
    this.dispatch({ type: 'rewindStarted' });
    try {
      const result = await client.request('rewind', restore === 'conversation' ? { sessionId, entryId } : { sessionId, entryId, restore });
      this.dispatch({ type: 'rewound', restore, result });
      await this.loadSession(sessionId);
    } catch (error) {
      this.dispatch({ type: 'rewindFailed', message: `Could not rewind: ${describeError(error)}` });
    }
  }

  /** The view put the rewound prompt in its input box. */
  takeDraft(seq: number): void {
    this.dispatch({ type: 'draftTaken', seq });
  }

  // ---- model, mode, mentions -------------------------------------------------------------

  /** The models the picker offers: the session's provider's (or the workspace's). */
  async listModels(): Promise<void> {
    const client = this.client;
    const { sessionId, workspaceUri } = this._state;
    if (!client || (!sessionId && !workspaceUri)) return;
    try {
      const result = await client.request('modelList', sessionId ? { sessionId } : { workspaceUri });
      this.dispatch({ type: 'modelsListed', models: result.models, current: result.current });
    } catch {
      // The picker keeps what it showed (the session's own model); the list is asked again
      // each time the picker opens, and a switch that fails says why.
    }
  }

  /** Switch the session's model (the session goes on; the transcript says what it costs);
   * without a session, the next one starts with it. */
  async setModel(model: string): Promise<void> {
    const client = this.client;
    if (!client) return void this.notConnected();
    this.preferredModel = model;
    const sessionId = this._state.sessionId;
    if (!sessionId) {
      const chosen = this._state.models.find((m) => m.id === model);
      if (chosen) this.dispatch({ type: 'modelChosen', model: { id: chosen.id, name: chosen.name, contextWindow: chosen.contextWindow } });
      return;
    }
    try {
      const result = await client.request('modelSet', { sessionId, model });
      this.dispatch({ type: 'modelChanged', sessionId, result });
    } catch (error) {
      this.fail('Could not switch the model', error);
      // The picker shows the model the session really has.
      this.dispatch({ type: 'modelsListed', models: this._state.models });
    }
  }

  /** Switch when tools ask first (applies at once, even to a running turn's next call). */
  async setMode(mode: PermissionMode): Promise<void> {
    const client = this.client;
    if (!client) return void this.notConnected();
    this.preferredMode = mode;
    const sessionId = this._state.sessionId;
    if (!sessionId) return void this.dispatch({ type: 'modeChanged', mode });
    try {
      const result = await client.request('modeSet', { sessionId, mode });
      this.remember(sessionId, result.mode ?? mode);
      this.dispatch({ type: 'modeChanged', sessionId, mode: result.mode ?? mode, sandbox: result.sandbox });
    } catch (error) {
      this.fail('Could not switch the mode', error);
    }
  }

  private remember(sessionId: string, mode: PermissionMode): void {
    void this.hooks.memory?.update(`${MODE_KEY}:${sessionId}`, mode);
  }

  /** How hard the session's model thinks from the next request (the transcript says what the
   * change costs); without a session, the next one starts with it. */
  async setThinking(thinking: ThinkingLevel): Promise<void> {
    const client = this.client;
    if (!client) return void this.notConnected();
    this.preferredThinking = thinking;
    const sessionId = this._state.sessionId;
    if (!sessionId) {
      return void this.dispatch({ type: 'settingsRead', thinking });
    }
    try {
      const result = await client.request('thinkingSet', { sessionId, thinking });
      this.dispatch({ type: 'thinkingChanged', sessionId, result });
    } catch (error) {
      this.fail('Could not change the thinking level', error);
    }
  }

  /** The settings' permission mode and thinking level, shown until a session says its own. */
  readSettings(mode: PermissionMode | undefined, thinking: ThinkingLevel | undefined): void {
    this.dispatch({ type: 'settingsRead', mode: this.preferredMode ?? mode, thinking: this.preferredThinking ?? thinking });
  }

  /** Completions for an @-mention being typed. Each keystroke asks again and the answers may
   * come back in any order (the server lists on worker threads), so only the answer to the
   * latest query is kept: an older one arriving last would hide the list being typed for. */
  /** The prompt commands of the workspace, for the prompt box's `/` menu. */
  async listCommands(): Promise<void> {
    const client = this.client;
    const workspaceUri = this._state.workspaceUri;
    if (!client || !workspaceUri) return;
    try {
      const { commands } = await client.request('commandList', { workspaceUri });
      this.dispatch({ type: 'commandsListed', commands });
    } catch {
      // none listed: the menu offers the panel's own
    }
  }

  async completeMention(query: string): Promise<void> {
    const client = this.client;
    const workspaceUri = this._state.workspaceUri;
    if (!client || !workspaceUri) return;
    this.mentionQuery = query;
    let items: MentionItem[] = [];
    try {
      items = (await client.request('mentionComplete', { workspaceUri, query, limit: 30 })).items;
    } catch {
      // no completions: the mention is still typed by hand
    }
    if (this.mentionQuery === query) this.dispatch({ type: 'mentionsListed', query, items });
  }

  // ---- MCP servers -----------------------------------------------------------------------

  /** Accept the waiting change of the MCP tools; the status that follows clears the banner. */
  async acceptTools(): Promise<void> {
    const client = this.client;
    const sessionId = this._state.sessionId;
    if (!client) return void this.notConnected();
    if (!sessionId) return;
    try {
      const result = await client.request('mcpAcceptTools', { sessionId });
      if (result.accepted) {
        const when = result.deferred ? 'from the next model call' : 'from the next request';
        this.dispatch({
          type: 'notice',
          level: 'info',
          message: `New MCP tool list accepted: it applies ${when}, which re-reads about ${result.tokens} tokens.`,
        });
      }
    } catch (error) {
      this.fail('Could not accept the MCP tools', error);
    }
  }

  async restartMcpServer(name: string): Promise<void> {
    const client = this.client;
    const sessionId = this._state.sessionId;
    if (!client) return void this.notConnected();
    if (!sessionId) return;
    try {
      await client.request('mcpRestart', { sessionId, name });
    } catch (error) {
      this.fail(`Could not restart the MCP server ${name}`, error);
    }
  }

  /** `text` pinned for the session: a fact when it starts with `fact:`, else a rule. */
  async addPin(text: string): Promise<void> {
    const client = this.client;
    const sessionId = this._state.sessionId;
    if (!client) return void this.notConnected();
    if (!sessionId) return;
    const fact = /^\s*fact:/i.exec(text);
    const rule = /^\s*rule:/i.exec(text);
    const body = text.slice((fact ?? rule)?.[0].length ?? 0).trim();
    try {
      const result = await client.request('pinsAdd', { sessionId, text: body, kind: fact ? 'fact' : 'rule' });
      this.dispatch(
        { type: 'pinsChanged', sessionId, pins: result.pins },
        { type: 'notice', level: 'info', message: `Pinned ${result.pin.kind}: ${result.pin.text} (× in the pins above removes it).` },
      );
    } catch (error) {
      this.fail('Could not pin that', error);
    }
  }

  /** `/remember` typed in the prompt box: pinned in the session (a new one without). */
  private async rememberTyped(text: string): Promise<void> {
    if (!text.trim()) {
      this.dispatch({ type: 'notice', level: 'warning', message: 'Write what to pin after /remember (start with "fact:" to pin a fact).' });
      return;
    }
    if (!this._state.sessionId) await this.newSession();
    await this.addPin(text);
  }

  async removePin(pinId: string): Promise<void> {
    const client = this.client;
    const sessionId = this._state.sessionId;
    if (!client) return void this.notConnected();
    if (!sessionId) return;
    try {
      const result = await client.request('pinsRemove', { sessionId, pinId });
      this.dispatch({ type: 'pinsChanged', sessionId, pins: result.pins });
    } catch (error) {
      this.fail('Could not remove the pin', error);
    }
  }

  // ---- permissions -----------------------------------------------------------------------

  private askPermission(params: RequestPermissionParams, token: CancellationTokenLike): Promise<RequestPermissionResult> {
    const requestId = `p${++this.permissionCounter}`;
    return new Promise<RequestPermissionResult>((resolve) => {
      const cancelListener = token.onCancellationRequested(() => this.settlePermission(requestId, 'cancelled'));
      this.permissionWaiters.set(requestId, { resolve, cancelListener });
      this.dispatch({ type: 'permissionRequested', requestId, params });
      if (token.isCancellationRequested) this.settlePermission(requestId, 'cancelled');
      else this.hooks.onPermissionAsked?.(requestId, params);
    });
  }

  /** The user's answer from the card or the diff editor; no option means dismissed
   * ("cancelled"). `extra`: words for the agent with a rejection, a revised change with an
   * allowance. */
  answerPermission(requestId: string, optionId?: string, extra: PermissionExtra = {}): void {
    if (!optionId) return this.settlePermission(requestId, 'cancelled');
    const message = extra.message?.trim();
    this.settlePermission(requestId, {
      selected: optionId,
      ...(message ? { message } : {}),
      ...(extra.newText !== undefined ? { newText: extra.newText } : {}),
    });
  }

  private settlePermission(requestId: string, outcome: RequestPermissionResult['outcome']): void {
    const waiter = this.permissionWaiters.get(requestId);
    if (!waiter) return;
    this.permissionWaiters.delete(requestId);
    waiter.cancelListener.dispose();
    waiter.resolve({ outcome });
    this.dispatch({ type: 'permissionResolved', requestId, outcome });
    this.hooks.onPermissionSettled?.(requestId);
  }

  get pendingPermissions(): number {
    return this.permissionWaiters.size;
  }

  // ---- errors ----------------------------------------------------------------------------

  private trace(message: string): void {
    this.hooks.trace?.(message);
  }

  private notConnected(): undefined {
    this.dispatch({
      type: 'notice',
      level: 'warning',
      message: 'The agent server is not running. Use "Agent: Restart Server" after fixing the problem shown above.',
    });
    return undefined;
  }

  private fail(what: string, error: unknown): void {
    if (isRpcError(error) && error.code === ErrorCodes.ConfigurationError) {
      this.dispatch({ type: 'problem', message: `${what}: ${describeError(error)}` });
      this.hooks.onConfigurationError?.(error.message);
      return;
    }
    this.dispatch({ type: 'notice', level: 'error', message: `${what}: ${describeError(error)}` });
  }
}

/** How long a session reopened after a start waits for the server before to let it go: it
 * exits once its window's extension host has ended, which a loaded machine can stretch to
 * seconds (0.4 s measured idle). Each load waits up to 5 s of it in the server too. */
const LOCK_WAIT_MS = 30_000;
const LOCK_RETRY_MS = 250;

async function loadWaitingForLock(client: AgentClient, sessionId: string, waitMs: number, onWait?: (error: unknown) => void) {
  const deadline = Date.now() + waitMs;
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await client.request('sessionLoad', { sessionId });
    } catch (error) {
      const locked = isRpcError(error) && error.code === ErrorCodes.SessionLocked;
      if (!locked || Date.now() + LOCK_RETRY_MS > deadline) throw error;
      if (attempt === 0) onWait?.(error);
      await new Promise((resolve) => setTimeout(resolve, LOCK_RETRY_MS));
    }
  }
}

/** A user-facing sentence for a request error (the server's messages say what to do). */
export function describeError(error: unknown): string {
  if (isRpcError(error)) {
    switch (error.code) {
      case ErrorCodes.SessionBusy:
        return `${error.message} (a turn is already running on this session)`;
      case ErrorCodes.SessionLocked:
        return `${error.message} (another process has this session open)`;
      default:
        return error.message;
    }
  }
  if (error instanceof Error) return error.message;
  return String(error);
}
