/**
 * Starts, watches and restarts `python -m agent_server serve` through vscode-languageclient.
 * Modelled on vscode-python-tools-extension-template (src/common/server.ts): resolve the
 * interpreter, build the environment, create a LanguageClient, restart on demand. Adds a
 * preflight import check so that a missing package becomes a sentence with the command to run.
 */
import { execFile } from 'node:child_process';
import * as readline from 'node:readline';
import * as vscode from 'vscode';
import {
  CloseAction,
  ErrorAction,
  LanguageClient,
  RevealOutputChannelOn,
  ShowMessageNotification,
  ShowMessageRequest,
  State,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';
import { AgentClient, initializationOptions } from '../protocol/client';
import type { ApiKeyStore, McpSecretStore } from '../secrets';
import {
  CONFIG_SECTION,
  SERVER_SECTION,
  agentSettingsFrom,
  describeKeys,
  ignoredWorkspaceValues,
  serverEnvironment,
} from '../settings/mapping';
import { describeLaunchFailure, logLevelOf, StderrTail, type LaunchAdvice } from './launchFailure';
import { showNotice } from './notices';
import { resolveInterpreter, type Interpreter } from './python';
import { noticeText } from '../webview/literal';

export interface ServerHooks {
  /** The server is up (first start or an automatic restart): attach and reopen the session. */
  onRunning(client: AgentClient): void;
  /** The server is down; `advice` says why and what to do when it did not stop on request. */
  onStopped(advice: LaunchAdvice | undefined): void;
  onStarting(message: string): void;
}

const PREFLIGHT =
  'import sys\n' +
  'if sys.version_info < (3, 11):\n' +
  '    sys.exit("agent-server requires Python 3.11 or newer, not " + sys.version.split()[0])\n' +
  'import agent_server\n';

/** Restart by itself only if the server had been running this long (a crash, not a bad setup). */
const AUTO_RESTART_MIN_UPTIME_MS = 30_000;

export class AgentServer implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private agentClient: AgentClient | undefined;
  private interpreter: Interpreter | undefined;
  private readonly tail = new StderrTail();
  private stopping = false;
  private startedAt = 0;
  private autoRestarts: number[] = [];
  private starting: Promise<void> | undefined;
  private clientDisposables: vscode.Disposable[] = [];

  constructor(
    private readonly log: vscode.LogOutputChannel,
    private readonly keys: ApiKeyStore,
    private readonly hooks: ServerHooks,
    private readonly mcpSecrets?: McpSecretStore,
  ) {}

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  get languageClient(): LanguageClient | undefined {
    return this.client;
  }

  /** Starts the server unless it is running or starting. */
  start(): Promise<void> {
    if (this.client) return Promise.resolve();
    this.starting ??= this.doStart().finally(() => (this.starting = undefined));
    return this.starting;
  }

  async restart(): Promise<void> {
    await this.starting;
    await this.stop();
    await this.start();
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.agentClient = undefined;
    for (const d of this.clientDisposables) d.dispose();
    this.clientDisposables = [];
    if (!client) return;
    this.stopping = true;
    try {
      if (client.state !== State.Stopped) await client.stop(5000);
    } catch (error) {
      this.log.warn(`Stopping the server: ${String(error)}`);
    } finally {
      this.stopping = false;
      await client.dispose().catch(() => undefined);
    }
    this.hooks.onStopped(undefined);
  }

  /** `workspace/didChangeConfiguration` with the new `agent` section. */
  async notifyConfigurationChanged(): Promise<void> {
    const client = this.client;
    if (!client || client.state !== State.Running) return;
    const settings = agentSettingsFrom(vscode.workspace.getConfiguration(CONFIG_SECTION, currentFolder()));
    await client.sendNotification('workspace/didChangeConfiguration', { settings: { [SERVER_SECTION]: settings } });
  }

  dispose(): void {
    void this.stop();
  }

  // ---- start -----------------------------------------------------------------------------

  private async doStart(): Promise<void> {
    const folder = currentFolder();
    this.hooks.onStarting('Starting the agent server…');
    const interpreter = await resolveInterpreter(folder, this.log);
    this.interpreter = interpreter;
    const config = vscode.workspace.getConfiguration(CONFIG_SECTION, folder);
    const settings = agentSettingsFrom(config);
    for (const key of ignoredWorkspaceValues(config)) {
      this.log.warn(
        `${CONFIG_SECTION}.${key} is set in the workspace's settings and ignored: it is taken only from your user settings (docs/security.md)`,
      );
    }
    const keys = await this.keys.all();
    const mcpSecrets = (await this.mcpSecrets?.all()) ?? {};
    const env = serverEnvironment(process.env, settings, keys, mcpSecrets);
    const cwd = folder?.uri.fsPath;
    this.log.info(
      `Server: ${interpreter.path} -m agent_server serve (interpreter from ${interpreter.source}); ${describeKeys(keys, settings)}; ` +
        `MCP secrets: ${Object.keys(mcpSecrets).join(', ') || 'none'}; sessions in ${settings.sessionsDir ?? 'the default folder'}`,
    );

    const preflight = await runPreflight(interpreter.path, env, cwd);
    if (!preflight.ok) {
      const advice = describeLaunchFailure({ interpreter: interpreter.path, source: interpreter.source, ...preflight });
      this.log.error(`Server cannot start: ${advice.message}`);
      if (preflight.stderr) this.log.error(preflight.stderr.trim());
      this.hooks.onStopped(advice);
      void showAdvice(advice);
      return;
    }

    this.tail.clear();
    const serverOptions: ServerOptions = {
      command: interpreter.path,
      // The extension keeps a workspace's values out of the settings that carry authority
      // (machine scope, USER_ONLY_KEYS): the server may take them as sent (docs/security.md).
      args: ['-m', 'agent_server', 'serve', '--trust-editor-settings'],
      options: { cwd, env },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [],
      outputChannel: this.log,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: () =>
        initializationOptions(agentSettingsFrom(vscode.workspace.getConfiguration(CONFIG_SECTION, currentFolder()))),
      stdioOptions: {
        stdout: (input, out) => {
          readline.createInterface({ input, crlfDelay: Infinity, terminal: false }).on('line', (line) => out.info(line));
        },
        stderr: (input, out) => {
          readline.createInterface({ input, crlfDelay: Infinity, terminal: false }).on('line', (line) => {
            this.tail.push(line);
            out[logLevelOf(line)](line);
          });
        },
      },
      middleware: {
        workspace: {
          configuration: async (params, token, next) => {
            const isAgent = (section: string | undefined): boolean => section === SERVER_SECTION;
            const agentFor = (scopeUri: string | undefined) =>
              agentSettingsFrom(
                vscode.workspace.getConfiguration(CONFIG_SECTION, scopeUri ? vscode.Uri.parse(scopeUri) : currentFolder()),
              );
            if (params.items.every((item) => isAgent(item.section))) {
              return params.items.map((item) => agentFor(item.scopeUri));
            }
            const others = await next(params, token);
            if (!Array.isArray(others)) return others;
            return params.items.map((item, i) => (isAgent(item.section) ? agentFor(item.scopeUri) : others[i]));
          },
        },
      },
      errorHandler: {
        error: () => ({ action: ErrorAction.Continue, handled: true }),
        closed: () => this.onClosed(),
      },
      initializationFailedHandler: (error) => {
        const message = error instanceof Error ? error.message : String(error);
        this.log.error(`Server initialization failed: ${message}`);
        return false;
      },
    };

    const client = new LanguageClient('agentServer', 'Agent Server', serverOptions, clientOptions);
    // The server's messages name settings, models and files, which may hold `[x](command:...)`:
    // shown literally (noticeText), where vscode-languageclient would show them as Markdown.
    client.onNotification(ShowMessageNotification.type, (params) => {
      void showNotice(params.type, params.message);
    });
    client.onRequest(ShowMessageRequest.type, (params) => showNotice(params.type, params.message, params.actions));
    const agentClient = new AgentClient(client);
    this.client = client;
    this.agentClient = agentClient;
    this.clientDisposables.push(
      client.onDidChangeState((e) => {
        if (e.newState === State.Running && this.client === client) {
          this.startedAt = Date.now();
          this.hooks.onRunning(agentClient);
        }
      }),
    );
    try {
      await client.start();
    } catch (error) {
      if (this.client !== client) return;
      this.client = undefined;
      this.agentClient = undefined;
      const advice = describeLaunchFailure({
        interpreter: interpreter.path,
        source: interpreter.source,
        stderr: this.tail.toString() || (error instanceof Error ? error.message : String(error)),
      });
      this.log.error(`Server failed to start: ${advice.message}`);
      await client.dispose().catch(() => undefined);
      this.hooks.onStopped(advice);
      void showAdvice(advice);
    }
  }

  private onClosed(): { action: CloseAction; handled: boolean; message?: string } {
    if (this.stopping || !this.client) return { action: CloseAction.DoNotRestart, handled: true };
    const now = Date.now();
    this.autoRestarts = this.autoRestarts.filter((t) => now - t < 180_000);
    const uptime = this.startedAt ? now - this.startedAt : 0;
    if (uptime >= AUTO_RESTART_MIN_UPTIME_MS && this.autoRestarts.length < 3) {
      this.autoRestarts.push(now);
      this.log.warn('The server exited; restarting it.');
      this.hooks.onStarting('The agent server exited; restarting…');
      return { action: CloseAction.Restart, handled: true };
    }
    const advice = describeLaunchFailure({
      interpreter: this.interpreter?.path ?? 'python3',
      source: this.interpreter?.source ?? 'default',
      stderr: this.tail.toString(),
    });
    this.log.error(`Server stopped: ${advice.message}`);
    const client = this.client;
    this.client = undefined;
    this.agentClient = undefined;
    for (const d of this.clientDisposables) d.dispose();
    this.clientDisposables = [];
    // Let the client finish its own shutdown before disposing it.
    setTimeout(() => void client.dispose().catch(() => undefined), 0);
    this.hooks.onStopped(advice);
    void showAdvice(advice);
    return { action: CloseAction.DoNotRestart, handled: true };
  }
}

function currentFolder(): vscode.WorkspaceFolder | undefined {
  return vscode.workspace.workspaceFolders?.[0];
}

interface PreflightResult {
  ok: boolean;
  error?: { code?: string; message?: string };
  stderr?: string;
  exitCode?: number | null;
}

/** `python -c "import agent_server"`: fails fast with the reason, before any LSP traffic. */
function runPreflight(python: string, env: Record<string, string | undefined>, cwd: string | undefined): Promise<PreflightResult> {
  return new Promise((resolve) => {
    execFile(python, ['-c', PREFLIGHT], { env: env as NodeJS.ProcessEnv, cwd, timeout: 30_000 }, (error, _stdout, stderr) => {
      if (!error) return resolve({ ok: true });
      const code = (error as NodeJS.ErrnoException).code;
      resolve({
        ok: false,
        error: typeof code === 'string' ? { code, message: error.message } : undefined,
        stderr: String(stderr ?? ''),
        exitCode: typeof code === 'number' ? code : null,
      });
    });
  });
}

async function showAdvice(advice: LaunchAdvice): Promise<void> {
  const actions = advice.fix ? ['Copy Install Command', 'Open Settings', 'Show Log'] : ['Open Settings', 'Show Log'];
  const choice = await vscode.window.showErrorMessage(noticeText(advice.message), ...actions);
  if (choice === 'Copy Install Command' && advice.fix) await vscode.env.clipboard.writeText(advice.fix);
  else if (choice === 'Open Settings') await vscode.commands.executeCommand('workbench.action.openSettings', 'agentServer');
  else if (choice === 'Show Log') await vscode.commands.executeCommand('agentServer.showLog');
}
