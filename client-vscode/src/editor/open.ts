/**
 * Opening what the view links to: a workspace path (a file at a line, or a folder in the
 * Explorer), with `vscode.open`. The path comes from the model or a tool: it is resolved inside
 * the workspace folder and opened only if it is there.
 */
import * as vscode from 'vscode';

/** The workspace URI of `path` (relative to `root`, or absolute inside it); undefined when it
 * points outside the workspace. */
export function workspaceUri(root: vscode.Uri, path: string): vscode.Uri | undefined {
  const cleaned = path.replace(/^\.\//, '');
  const rootPath = root.path.replace(/\/+$/, '');
  const target = cleaned.startsWith('/') ? root.with({ path: cleaned }) : vscode.Uri.joinPath(root, cleaned);
  const normalised = target.path.replace(/\/+$/, '');
  if (normalised !== rootPath && !normalised.startsWith(`${rootPath}/`)) return undefined;
  return target;
}

export async function openWorkspacePath(root: vscode.Uri | undefined, path: string, line?: number): Promise<void> {
  const uri = root ? workspaceUri(root, path) : undefined;
  if (!uri) {
    void vscode.window.showWarningMessage(`${path} is not in the workspace folder: it was not opened.`);
    return;
  }
  let stat: vscode.FileStat;
  try {
    stat = await vscode.workspace.fs.stat(uri);
  } catch {
    void vscode.window.showWarningMessage(`There is no ${path} in the workspace (any more).`);
    return;
  }
  if (stat.type & vscode.FileType.Directory) {
    await vscode.commands.executeCommand('revealInExplorer', uri);
    return;
  }
  const at = line && line > 0 ? new vscode.Position(line - 1, 0) : undefined;
  await vscode.commands.executeCommand('vscode.open', uri, at ? { selection: new vscode.Range(at, at), preview: true } : { preview: true });
}
