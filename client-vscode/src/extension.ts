/**
 * The extension's entry point: wires the server process, the session controller, the chat
 * view, the status bar, the commands, settings and secrets together.
 */
import * as vscode from 'vscode';
import { SessionController } from './controller';
import { ChangeDiffs } from './editor/diffs';
import { openWorkspacePath } from './editor/open';
import { CommandTerminals } from './editor/commandTerminals';
import { ProblemsReporter } from './editor/problems';
import type { PermissionMode, ThinkingLevel } from './protocol/types';
import { KEY_FAMILIES, ApiKeyStore, MCP_SECRET_NAME, McpSecretStore } from './secrets';
import { AgentServer } from './server/agentServer';
import { onPythonInterpreterChange } from './server/python';
import { CONFIG_SECTION, DEFAULT_KEY_ENV, agentSettingsFrom, keyFamilyOf, restartReason, valueOf } from './settings/mapping';
import { ChatViewProvider } from './view/chatViewProvider';
import { deleteSession, pickMode, pickModel, pickSession, pickThinking, renameSession } from './view/pickers';
import { insideFolder, mentionOf } from './editor/mention';
import type { WebviewToHost } from './view/messages';
import { ContextStatusBar } from './view/statusBar';
import { noticeText } from './webview/literal';

let server: AgentServer | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel('Agent Server', { log: true });
  const keys = new ApiKeyStore(context.secrets);
  const mcpSecrets = new McpSecretStore(context.secrets);
  const statusBar = new ContextStatusBar('agentServer.showView');

  let view: ChatViewProvider | undefined;
  let diffs: ChangeDiffs | undefined;
  let problems: ProblemsReporter | undefined;
  let terminals: CommandTerminals | undefined;
  const controller = new SessionController({
    onUpdate: (params) => {
      problems?.onUpdate(params);
      terminals?.onUpdate(params);
    },
    memory: context.workspaceState,
    onPermissionSettled: (requestId) => void diffs?.settled(requestId),
    onPermissionAsked: (requestId, params) => {
      // agentServer.review.openDiff: a proposed edit opens in the diff editor by itself.
      const change = params.toolCall.content?.find((c) => c.type === 'diff');
      if (change?.type === 'diff' && vscode.workspace.getConfiguration(CONFIG_SECTION).get<boolean>('review.openDiff')) {
        void diffs?.review(requestId, change, { preserveFocus: true });
      }
    },
    trace: (message) => log.info(message),
    publish: (actions) => {
      view?.publish(actions);
      statusBar.update(controller.state);
    },
    onConfigurationError: (message) => {
      void vscode.window.showErrorMessage(noticeText(message), 'Set API Key', 'Open Settings').then((choice) => {
        if (choice === 'Set API Key') void vscode.commands.executeCommand('agentServer.setApiKey');
        else if (choice === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', CONFIG_SECTION);
      });
    },
  });
  controller.setWorkspace(vscode.workspace.workspaceFolders?.[0]?.uri.toString());
  const workspaceRoot = (): vscode.Uri | undefined => vscode.workspace.workspaceFolders?.[0]?.uri;
  // agentServer.tools.terminal.visible: the session's commands in a terminal the user types in.
  terminals = new CommandTerminals({
    enabled: () => vscode.workspace.getConfiguration(CONFIG_SECTION).get<boolean>('tools.terminal.visible') === true,
    title: (sessionId) =>
      (sessionId === controller.state.sessionId ? controller.state.title : controller.state.sessions.find((s) => s.sessionId === sessionId)?.title) ?? undefined,
    input: (params) => controller.toolInput(params),
  });
  context.subscriptions.push(terminals);
  problems = new ProblemsReporter(workspaceRoot, (sessionId, path, found) => void controller.reportProblems(sessionId, path, found));
  diffs = new ChangeDiffs(workspaceRoot, {
    accept: (requestId, newText) => controller.answerPermission(requestId, 'allow_once', newText === undefined ? {} : { newText }),
    reject: (requestId, message) => controller.answerPermission(requestId, 'reject_once', message ? { message } : {}),
  });
  // Before a session says its own, the view shows the settings' mode and thinking level.
  const readSettings = (): void => {
    const config = vscode.workspace.getConfiguration(CONFIG_SECTION);
    controller.readSettings(
      valueOf(config, 'permissions.mode') as PermissionMode | undefined,
      config.get<ThinkingLevel>('thinking'),
    );
  };
  readSettings();

  const agentServer = new AgentServer(log, keys, {
    onStarting: (message) => controller.dispatch({ type: 'serverStatus', status: 'starting', message }),
    onRunning: (client) => {
      controller.attach(client);
      controller.dispatch({ type: 'serverStatus', status: 'running' });
      void controller.openInitialSession();
    },
    onStopped: (advice) => {
      controller.detach();
      controller.dispatch(
        advice
          ? { type: 'serverStatus', status: 'failed', message: advice.message }
          : { type: 'serverStatus', status: 'stopped', message: 'The agent server is stopped.' },
      );
    },
  }, mcpSecrets);
  server = agentServer;
  const ensureServer = (): Promise<void> => agentServer.start();

  const onMessage = (message: WebviewToHost): void => {
    switch (message.type) {
      case 'send':
        void controller.send(message.text, message.images ?? []);
        break;
      case 'stop':
        void controller.stop();
        break;
      case 'newSession':
        void controller.newSession();
        break;
      case 'loadSession':
        void controller.loadSession(message.sessionId);
        break;
      case 'loadOlder':
        void controller.loadOlder();
        break;
      case 'refreshSessions':
        void controller.refreshSessions();
        break;
      case 'compact':
        void controller.compact(message.instructions);
        break;
      case 'rewindPreview':
        void controller.previewRewind(message.entryId);
        break;
      case 'rewind':
        void controller.rewind(message.entryId, message.restore);
        break;
      case 'rewindCancel':
        controller.cancelRewind();
        break;
      case 'showChangesSince':
        void controller.changesSince(message.entryId).then((changes) => changes && diffs?.showSince(changes));
        break;
      case 'draftTaken':
        controller.takeDraft(message.seq);
        break;
      case 'listModels':
        void controller.listModels();
        break;
      case 'setModel':
        void controller.setModel(message.model);
        break;
      case 'setMode':
        void controller.setMode(message.mode);
        break;
      case 'completeMention':
        void controller.completeMention(message.query);
        break;
      case 'listCommands':
        void controller.listCommands();
        break;
      case 'permission':
        controller.answerPermission(message.requestId, message.optionId, message.message ? { message: message.message } : {});
        break;
      case 'reviewChange': {
        const card = controller.state.items.find((i) => i.kind === 'permission' && i.requestId === message.requestId);
        const change = card?.kind === 'permission' ? card.toolCall.content?.find((c) => c.type === 'diff') : undefined;
        if (change?.type === 'diff') void diffs?.review(message.requestId, change);
        break;
      }
      case 'openDiff': {
        const item = controller.state.items.find((i) => i.id === message.itemId);
        const change = item?.kind === 'toolCall' ? item.content[message.index] : undefined;
        if (change?.type === 'diff') void diffs?.showMade(change);
        break;
      }
      case 'open':
        void openWorkspacePath(workspaceRoot(), message.path, message.line);
        break;
      case 'pick':
        void (message.what === 'session'
          ? pickSession(controller)
          : message.what === 'model'
            ? pickModel(controller)
            : message.what === 'mode'
              ? pickMode(controller)
              : pickThinking(controller));
        break;
      case 'setThinking':
        void controller.setThinking(message.thinking);
        break;
      case 'sendQueued':
        void controller.sendQueued(message.id);
        break;
      case 'removeQueued':
        controller.removeQueued(message.id);
        break;
      case 'acceptTools':
        void controller.acceptTools();
        break;
      case 'restartMcp':
        void controller.restartMcpServer(message.name);
        break;
      case 'forgetPin':
        void controller.removePin(message.pinId);
        break;
      case 'restorePin':
        void controller.addPin(`${message.kind}: ${message.text}`);
        break;
      case 'dismissProblem':
        controller.dismissProblem();
        break;
      case 'command': {
        const command = {
          showOutput: 'agentServer.showLog',
          openSettings: 'agentServer.openSettings',
          setApiKey: 'agentServer.setApiKey',
          restartServer: 'agentServer.restartServer',
        }[message.command];
        void vscode.commands.executeCommand(command);
        break;
      }
      case 'ready':
        break;
    }
  };
  view = new ChatViewProvider(context.extensionUri, controller, onMessage);

  let restartTimer: ReturnType<typeof setTimeout> | undefined;
  const scheduleRestart = (why: string): void => {
    if (restartTimer) clearTimeout(restartTimer);
    restartTimer = setTimeout(() => {
      restartTimer = undefined;
      log.info(`Restarting the server: ${why}.`);
      void agentServer.restart();
    }, 300);
  };

  const showView = async (): Promise<void> => {
    await vscode.commands.executeCommand(`${ChatViewProvider.viewType}.focus`);
  };
  /** The chat where the user has it: the editor tab when it shows, else the sidebar's view. */
  const showChat = async (): Promise<void> => {
    if (!view?.visibleInEditor) await showView();
  };

  context.subscriptions.push(
    log,
    statusBar,
    view,
    diffs,
    agentServer,
    vscode.window.registerWebviewViewProvider(ChatViewProvider.viewType, view),
    // The chat in an editor tab: the same page on the same controller (and back after a reload).
    vscode.window.registerWebviewPanelSerializer(ChatViewProvider.panelType, view),
    vscode.commands.registerCommand('agentServer.openChatInEditor', () => view?.openInEditor()),
    // The server starts with the view, once; after a failure it waits for a fix or a restart.
    view.onDidResolve(() => {
      if (controller.state.server.status === 'starting') void ensureServer();
    }),

    vscode.commands.registerCommand('agentServer.showView', showView),
    // cacheRetention "auto": the user is away while the window is out of focus.
    vscode.window.onDidChangeWindowState((state) => controller.setUserIdle(!state.focused)),
    vscode.commands.registerCommand('agentServer.showLog', () => log.show(true)),
    vscode.commands.registerCommand('agentServer.openSettings', () =>
      vscode.commands.executeCommand('workbench.action.openSettings', CONFIG_SECTION),
    ),
    vscode.commands.registerCommand('agentServer.newSession', async () => {
      await showChat();
      await ensureServer();
      await controller.newSession();
      view?.focusInput();
    }),
    vscode.commands.registerCommand('agentServer.compact', async () => {
      await ensureServer();
      if (!controller.state.sessionId) {
        void vscode.window.showInformationMessage('No agent session is open.');
        return;
      }
      const instructions = await vscode.window.showInputBox({
        title: 'Compact the agent context',
        prompt: 'Optional instructions for the summary (what to keep). Leave empty for the default.',
        ignoreFocusOut: true,
      });
      if (instructions === undefined) return;
      await controller.compact(instructions);
      const result = controller.state.compactResult;
      if (result && result.outcome !== 'compacted') void vscode.window.showInformationMessage(noticeText(result.message));
    }),
    vscode.commands.registerCommand('agentServer.remember', async () => {
      await ensureServer();
      if (!controller.state.sessionId) {
        void vscode.window.showInformationMessage('No agent session is open.');
        return;
      }
      const text = await vscode.window.showInputBox({
        title: 'Pin a rule for the agent session',
        prompt: 'Carried verbatim across every compaction. Start with "fact:" to pin a fact.',
        ignoreFocusOut: true,
      });
      if (text) await controller.addPin(text);
    }),
    vscode.commands.registerCommand('agentServer.interrupt', () => controller.stop()),
    vscode.commands.registerCommand('agentServer.pickThinking', async () => {
      await ensureServer();
      await pickThinking(controller);
    }),
    vscode.commands.registerCommand('agentServer.addToChat', async () => {
      const editor = vscode.window.activeTextEditor;
      const root = workspaceRoot();
      const file = editor?.document.uri;
      const relative = root && file?.scheme === 'file' && root.scheme === 'file' ? insideFolder(root.path, file.path) : undefined;
      const { selection } = editor ?? {};
      const mention = relative === undefined ? undefined : mentionOf(relative, selection && {
        startLine: selection.start.line, endLine: selection.end.line, endCharacter: selection.end.character, isEmpty: selection.isEmpty,
      });
      if (!mention) {
        void vscode.window.showInformationMessage('Agent: open a file of the workspace folder to add it, or lines of it, to the chat.');
        return;
      }
      await showChat();
      view?.insertText(mention);
    }),
    vscode.commands.registerCommand('agentServer.renameSession', async () => {
      await ensureServer();
      await renameSession(controller);
    }),
    vscode.commands.registerCommand('agentServer.deleteSession', async () => {
      await ensureServer();
      await deleteSession(controller);
    }),
    vscode.commands.registerCommand('agentServer.restartServer', async () => {
      log.info('Restart requested.');
      await agentServer.restart();
    }),
    vscode.commands.registerCommand('agentServer.setApiKey', async () => {
      const provider = agentSettingsFrom(vscode.workspace.getConfiguration(CONFIG_SECTION)).provider;
      const preferred = keyFamilyOf(provider) ?? 'anthropic';
      const picked = await vscode.window.showQuickPick(
        [...KEY_FAMILIES]
          .sort((a, b) => (a.family === preferred ? -1 : b.family === preferred ? 1 : 0))
          .map((k) => ({ label: k.label, detail: k.detail, family: k.family })),
        { title: 'Agent: Set API Key', placeHolder: 'Which provider is the key for?', ignoreFocusOut: true },
      );
      if (!picked) return;
      const existing = await keys.get(picked.family);
      const value = await vscode.window.showInputBox({
        title: `${picked.label} API key`,
        prompt:
          `Stored in VS Code's secret storage and handed to the server as ${DEFAULT_KEY_ENV[picked.family]} ` +
          '(or the variable named by agentServer.apiKeyEnv).' +
          (existing ? ' Leave empty to remove the stored key.' : ''),
        password: true,
        ignoreFocusOut: true,
        placeHolder: picked.family === 'anthropic' ? 'sk-ant-…' : 'sk-…',
      });
      if (value === undefined) return;
      const key = value.trim();
      if (key) await keys.set(picked.family, key);
      else if (existing) await keys.delete(picked.family);
      else return;
      void vscode.window.showInformationMessage(
        key ? `${picked.label} API key stored; restarting the agent server.` : `${picked.label} API key removed; restarting the agent server.`,
      );
      // keys.onDidChange restarts the server.
    }),

    keys.onDidChange(() => {
      if (agentServer.languageClient) scheduleRestart('an API key changed');
    }),
    vscode.commands.registerCommand('agentServer.setMcpSecret', async () => {
      const stored = await mcpSecrets.all();
      const name = await vscode.window.showInputBox({
        title: 'Agent: Set MCP Secret',
        prompt:
          'Environment variable name, as an MCP configuration uses it: "${NAME}" in env, headers or args. ' +
          (Object.keys(stored).length ? `Stored: ${Object.keys(stored).join(', ')}.` : 'None stored yet.'),
        placeHolder: 'GITHUB_TOKEN',
        ignoreFocusOut: true,
        validateInput: (v) => (MCP_SECRET_NAME.test(v.trim()) ? undefined : 'Letters, digits and _, not starting with a digit'),
      });
      if (!name) return;
      const value = await vscode.window.showInputBox({
        title: `MCP secret ${name.trim()}`,
        prompt: `Stored in VS Code's secret storage and handed to the agent server as ${name.trim()}.` +
          (stored[name.trim()] ? ' Leave empty to remove it.' : ''),
        password: true,
        ignoreFocusOut: true,
      });
      if (value === undefined) return;
      await mcpSecrets.set(name.trim(), value.trim());
      void vscode.window.showInformationMessage(
        `MCP secret ${name.trim()} ${value.trim() ? 'stored' : 'removed'}; restarting the agent server.`,
      );
      // mcpSecrets.onDidChange restarts the server.
    }),
    mcpSecrets.onDidChange(() => {
      if (agentServer.languageClient) scheduleRestart('an MCP secret changed');
    }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (!e.affectsConfiguration(CONFIG_SECTION)) return;
      readSettings();
      const settings = agentSettingsFrom(vscode.workspace.getConfiguration(CONFIG_SECTION));
      const why = restartReason((key) => e.affectsConfiguration(`${CONFIG_SECTION}.${key}`), settings);
      if (why) {
        if (agentServer.languageClient || controller.state.server.status !== 'starting') scheduleRestart(why);
      } else {
        void agentServer.notifyConfigurationChanged();
      }
    }),
    vscode.workspace.onDidChangeWorkspaceFolders(() => {
      const uri = vscode.workspace.workspaceFolders?.[0]?.uri.toString();
      if (uri === controller.state.workspaceUri) return;
      controller.setWorkspace(uri);
      void controller.openInitialSession();
    }),
    { dispose: () => restartTimer && clearTimeout(restartTimer) },
  );

  // Without agentServer.python, the Python extension's interpreter is used: follow its changes.
  void onPythonInterpreterChange(() => {
    const configured = vscode.workspace.getConfiguration(CONFIG_SECTION).get<string>('python')?.trim();
    if (!configured && (agentServer.languageClient || controller.state.server.status === 'failed')) {
      scheduleRestart("the Python extension's interpreter changed");
    }
  }).then((d) => d && context.subscriptions.push(d));

  statusBar.update(controller.state);
}

export async function deactivate(): Promise<void> {
  await server?.stop();
  server = undefined;
}
