/**
 * The server's own messages (window/showMessage, window/showMessageRequest) as notifications.
 * vscode-languageclient shows them as VS Code does any notification text: Markdown links act
 * (`[x](command:workbench.action.terminal.sendSequence?...)`). The server's messages name
 * settings, models and files, which a workspace or a model may have written: shown literally.
 */
import * as vscode from 'vscode';
import { noticeText } from '../webview/literal';

/** LSP's MessageType: 1 an error, 2 a warning, anything else information. */
export function showNotice<T extends vscode.MessageItem>(
  type: number,
  message: string,
  actions: T[] = [],
): Thenable<T | undefined> {
  const text = noticeText(message);
  if (type === 1) return vscode.window.showErrorMessage(text, ...actions);
  if (type === 2) return vscode.window.showWarningMessage(text, ...actions);
  return vscode.window.showInformationMessage(text, ...actions);
}
