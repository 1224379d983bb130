/**
 * Opening what the view links to: a workspace path (a file at a line, or a folder in the
 * Explorer), with `vscode.open`. The path comes from the model or a tool: it is resolved inside
 * the workspace folder and opened only if it is there.
 */
import * as vscode from 'vscode';
import { labelText, noticeText } from '../webview/literal';

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
    void vscode.window.showWarningMessage(noticeText(`${path} is not in the workspace folder: it was not opened.`));
    return;
  }
  let stat: vscode.FileStat | undefined = await vscode.workspace.fs.stat(uri).then(
    (found) => found,
    () => undefined,
  );
  let target = uri;
  if (!stat && root && !path.includes('/')) {
    // A bare file name (`models.py`): the workspace's file of that name, or a choice of them.
    const found = await findByName(root, path);
    if (found) {
      target = found;
      stat = { type: vscode.FileType.File, ctime: 0, mtime: 0, size: 0 };
    }
  }
  if (!stat) {
    void vscode.window.showWarningMessage(noticeText(`There is no ${path} in the workspace (any more).`));
    return;
  }
  if (stat.type & vscode.FileType.Directory) {
    await vscode.commands.executeCommand('revealInExplorer', target);
    return;
  }
  const at = line && line > 0 ? new vscode.Position(line - 1, 0) : undefined;
  await vscode.commands.executeCommand('vscode.open', target, at ? { selection: new vscode.Range(at, at), preview: true } : { preview: true });
}

/** The workspace file named `name`; a quick pick when there are several. */
async function findByName(root: vscode.Uri, name: string): Promise<vscode.Uri | undefined> {
  if (!/^[\w@.+-]+$/.test(name)) return undefined;
  const found = await vscode.workspace.findFiles(new vscode.RelativePattern(root, `**/${name}`), undefined, 20);
  if (found.length <= 1) return found[0];
  const picked = await vscode.window.showQuickPick(
    found.map((uri) => ({ label: labelText(vscode.workspace.asRelativePath(uri, false)), uri })),
    { title: `Open ${name}`, placeHolder: `${found.length} files in the workspace are named ${name}` },
  );
  return picked?.uri;
}
