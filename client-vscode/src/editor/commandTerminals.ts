/**
 * One VS Code terminal per session for the commands the agent runs, with
 * `agentServer.tools.terminal.visible` on (issue 47): a `vscode.Pseudoterminal` around the
 * session's `CommandMirror` (commandTerminal.ts), named "Agent: <session title>", opened at the
 * session's first command without taking the focus. Closed by the user, it opens again at the
 * next command.
 */
import * as vscode from 'vscode';
import type { AgentUpdateParams } from '../protocol/types';
import { labelText } from '../webview/literal';
import { CommandMirror, type CommandTerminalHooks } from './commandTerminal';

export interface CommandTerminalsHooks extends CommandTerminalHooks {
  /** The setting, read as each command is announced. */
  enabled(): boolean;
  /** The session's title, if it has one. */
  title(sessionId: string): string | undefined;
}

interface Shown {
  mirror: CommandMirror;
  terminal?: vscode.Terminal;
  pty: vscode.Pseudoterminal;
  writes: vscode.EventEmitter<string>;
}

export class CommandTerminals implements vscode.Disposable {
  private readonly shown = new Map<string, Shown>();

  constructor(private readonly hooks: CommandTerminalsHooks) {}

  /** Every agent/update, as it comes. */
  onUpdate(params: AgentUpdateParams): void {
    const { sessionId, update } = params;
    let shown = this.shown.get(sessionId);
    if (update.kind === 'toolCall' && !this.hooks.enabled()) return; // not shown: not mirrored
    if (!shown) {
      if (update.kind !== 'toolCall') return;
      shown = this.mirrorOf(sessionId);
    }
    if (shown.mirror.update(update) && !shown.terminal) {
      const title = this.hooks.title(sessionId)?.trim();
      shown.terminal = vscode.window.createTerminal({
        name: labelText(`Agent: ${title || 'session'}`),
        pty: shown.pty,
        isTransient: true,
      });
      shown.terminal.show(true); // preserveFocus: the prompt box keeps the keyboard
    }
  }

  dispose(): void {
    for (const shown of [...this.shown.values()]) shown.terminal?.dispose();
    this.shown.clear();
  }

  private mirrorOf(sessionId: string): Shown {
    const writes = new vscode.EventEmitter<string>();
    let opened = false;
    const early: string[] = []; // what was written before VS Code opened the terminal
    const mirror = new CommandMirror(
      sessionId,
      (text) => (opened ? writes.fire(text) : void early.push(text)),
      this.hooks,
    );
    const shown: Shown = {
      mirror,
      writes,
      pty: {
        onDidWrite: writes.event,
        open: () => {
          opened = true;
          for (const text of early.splice(0)) writes.fire(text);
        },
        close: () => {
          if (this.shown.get(sessionId) === shown) this.shown.delete(sessionId);
          writes.dispose();
        },
        handleInput: (data) => mirror.handleInput(data),
      },
    };
    this.shown.set(sessionId, shown);
    return shown;
  }
}
