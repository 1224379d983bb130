/** The status-bar context meter; a click opens the Agent view. */
import * as vscode from 'vscode';
import { meterFor } from '../state/meter';
import type { ViewState } from '../state/reducer';
import { literal } from '../webview/literal';

export class ContextStatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private last: string | undefined;

  constructor(command: string) {
    this.item = vscode.window.createStatusBarItem('agentServer.context', vscode.StatusBarAlignment.Right, 100);
    this.item.name = 'Agent context';
    this.item.command = command;
    this.item.text = '$(comment-discussion) Agent';
    this.item.tooltip = 'Open the Agent view';
    this.item.show();
  }

  update(state: ViewState): void {
    const meter = meterFor(state.sessionId ? state.usage : undefined);
    const server = state.server;
    // The tooltip's every line is part of the key: the last call's figures change alone.
    const key = `${server.status}|${server.message ?? ''}|${meter?.detail ?? ''}|${meter?.label ?? ''}|${meter?.level ?? ''}|${state.compacting}`;
    if (key === this.last) return;
    this.last = key;
    if (server.status === 'failed' || server.status === 'stopped') {
      this.item.text = '$(error) Agent';
      // A string tooltip shows as plain text (no icons, no Markdown): literal is enough.
      this.item.tooltip = server.message === undefined ? 'The agent server is not running.' : literal(server.message);
      this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
      return;
    }
    if (!meter) {
      this.item.text = server.status === 'starting' ? '$(loading~spin) Agent' : '$(comment-discussion) Agent';
      this.item.tooltip = 'Open the Agent view';
      this.item.backgroundColor = undefined;
      return;
    }
    const icon = state.compacting ? '$(loading~spin)' : '$(dashboard)';
    this.item.text = `${icon} ${Math.round(meter.percent)}% ctx`;
    this.item.tooltip = `${meter.detail}\n\nClick to open the Agent view.`;
    this.item.backgroundColor =
      meter.level === 'critical'
        ? new vscode.ThemeColor('statusBarItem.errorBackground')
        : meter.level === 'high'
          ? new vscode.ThemeColor('statusBarItem.warningBackground')
          : undefined;
  }

  dispose(): void {
    this.item.dispose();
  }
}
