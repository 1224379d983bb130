/**
 * File changes in VS Code's diff editor.
 *
 * - A change the agent asks permission for (a write or an edit) is reviewed before it is
 *   made: the file as it is, against the proposed content in an editable in-memory document.
 *   The diff editor's own per-hunk arrows revert a hunk (rejecting that part); the document can
 *   be edited freely. "Accept change" (the editor's title bar, or Ctrl+Enter) answers the
 *   question with the content as reviewed (the server writes that, and tells the agent how it
 *   differs from its proposal); "Reject change" answers no, with what the agent should do
 *   instead if the user says.
 * - A change already made opens as the content before the agent's change against the file as
 *   it is now: reverting a hunk there undoes that part in the file itself (the server notices
 *   the edit and tells the agent).
 */
import * as vscode from 'vscode';
import type { RewindChangesResult, ToolCallContent } from '../protocol/types';
import { workspaceUri } from './open';
import { noticeText } from '../webview/literal';

export const BEFORE_SCHEME = 'agent-before';
export const PROPOSED_SCHEME = 'agent-proposed';

type Diff = Extract<ToolCallContent, { type: 'diff' }>;

/** Read-only snapshots: the content before a change. */
class Snapshots implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  put(uri: vscode.Uri, text: string): void {
    this.texts.set(uri.toString(), text);
    this.changed.fire(uri);
  }

  drop(uri: vscode.Uri): void {
    this.texts.delete(uri.toString());
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? '';
  }
}

/** Editable in-memory files: the proposed content, as the user reviews it. */
class ProposedFiles implements vscode.FileSystemProvider {
  private readonly files = new Map<string, { data: Uint8Array; mtime: number }>();
  private readonly emitter = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.emitter.event;

  put(uri: vscode.Uri, text: string): void {
    this.files.set(uri.toString(), { data: new TextEncoder().encode(text), mtime: Date.now() });
  }

  drop(uri: vscode.Uri): void {
    this.files.delete(uri.toString());
  }

  watch(): vscode.Disposable {
    return new vscode.Disposable(() => undefined);
  }

  stat(uri: vscode.Uri): vscode.FileStat {
    const file = this.files.get(uri.toString());
    if (!file) throw vscode.FileSystemError.FileNotFound(uri);
    return { type: vscode.FileType.File, ctime: file.mtime, mtime: file.mtime, size: file.data.byteLength };
  }

  readDirectory(): [string, vscode.FileType][] {
    return [];
  }

  createDirectory(): void {}

  readFile(uri: vscode.Uri): Uint8Array {
    const file = this.files.get(uri.toString());
    if (!file) throw vscode.FileSystemError.FileNotFound(uri);
    return file.data;
  }

  writeFile(uri: vscode.Uri, content: Uint8Array): void {
    this.files.set(uri.toString(), { data: content, mtime: Date.now() });
    this.emitter.fire([{ type: vscode.FileChangeType.Changed, uri }]);
  }

  delete(uri: vscode.Uri): void {
    this.files.delete(uri.toString());
  }

  rename(): void {
    throw vscode.FileSystemError.NoPermissions('rename');
  }
}

interface Review {
  requestId: string;
  proposed: vscode.Uri;
  before: vscode.Uri;
  /** The agent's proposal, to tell whether the user changed it. */
  newText: string;
}

export interface ReviewAnswers {
  accept(requestId: string, newText: string | undefined): void;
  reject(requestId: string, message: string | undefined): void;
}

export class ChangeDiffs implements vscode.Disposable {
  private readonly snapshots = new Snapshots();
  private readonly proposed = new ProposedFiles();
  private readonly reviews = new Map<string, Review>(); // by proposed URI
  private readonly disposables: vscode.Disposable[];
  private counter = 0;

  constructor(
    private readonly root: () => vscode.Uri | undefined,
    private readonly answers: ReviewAnswers,
  ) {
    this.disposables = [
      vscode.workspace.registerTextDocumentContentProvider(BEFORE_SCHEME, this.snapshots),
      vscode.workspace.registerFileSystemProvider(PROPOSED_SCHEME, this.proposed, { isCaseSensitive: true }),
      vscode.commands.registerCommand('agentServer.acceptChange', (uri?: vscode.Uri) => this.accept(uri)),
      vscode.commands.registerCommand('agentServer.rejectChange', (uri?: vscode.Uri) => this.reject(uri)),
    ];
  }

  /** Review a change waiting for permission: the file against the proposal (editable). */
  async review(requestId: string, change: Diff, { preserveFocus = false } = {}): Promise<void> {
    const existing = [...this.reviews.values()].find((r) => r.requestId === requestId);
    if (existing) {
      await this.show(existing.before, existing.proposed, change.path, 'review', preserveFocus);
      return;
    }
    const id = ++this.counter;
    const before = vscode.Uri.from({ scheme: BEFORE_SCHEME, path: `/${change.path}`, query: `review-${id}` });
    const proposed = vscode.Uri.from({ scheme: PROPOSED_SCHEME, path: `/${id}/${change.path}` });
    this.snapshots.put(before, change.oldText ?? '');
    this.proposed.put(proposed, change.newText);
    this.reviews.set(proposed.toString(), { requestId, proposed, before, newText: change.newText });
    await this.show(before, proposed, change.path, 'review', preserveFocus);
  }

  /** A change already made: the content before it against the file now. */
  async showMade(change: Diff): Promise<void> {
    const root = this.root();
    const file = root ? workspaceUri(root, change.path) : undefined;
    if (!file) {
      void vscode.window.showWarningMessage(noticeText(`${change.path} is not in the workspace folder.`));
      return;
    }
    const before = vscode.Uri.from({ scheme: BEFORE_SCHEME, path: `/${change.path}`, query: `made-${++this.counter}` });
    this.snapshots.put(before, change.oldText ?? '');
    await this.show(before, file, change.path, 'made');
  }

  /** What the agent changed since an entry, in one multi-file diff editor: each file as it was
   * then against the file now (an empty side for a file made since, or gone now). */
  async showSince(changes: RewindChangesResult): Promise<void> {
    const root = this.root();
    if (!root) return;
    const id = ++this.counter;
    // A snapshot has the file's own path (the side is in its query): the multi-file diff
    // editor marks a pair whose paths differ as a rename ("R", the old name struck through).
    const snapshot = (file: vscode.Uri, side: string, text: string): vscode.Uri => {
      const uri = vscode.Uri.from({ scheme: BEFORE_SCHEME, path: file.path, query: `since-${id}-${side}` });
      this.snapshots.put(uri, text);
      return uri;
    };
    const resources: [vscode.Uri, vscode.Uri, vscode.Uri][] = [];
    for (const file of changes.files) {
      const now = workspaceUri(root, file.path);
      if (!now) continue;
      const then = snapshot(now, 'then', thenText(file));
      const exists = await vscode.workspace.fs.stat(now).then(() => true, () => false);
      resources.push([now, then, exists ? now : snapshot(now, 'now', '')]);
    }
    if (resources.length === 0) {
      void vscode.window.showInformationMessage('The agent changed no file since then.');
      return;
    }
    // The multi-file diff editor adds the number of files to its title itself.
    await vscode.commands.executeCommand('vscode.changes', "The agent's changes since then", resources);
  }

  /** The question was answered (here or in the view) or withdrawn: its review closes. */
  async settled(requestId: string): Promise<void> {
    for (const [key, review] of [...this.reviews]) {
      if (review.requestId !== requestId) continue;
      this.reviews.delete(key);
      await this.close(review.proposed);
      this.proposed.drop(review.proposed);
      this.snapshots.drop(review.before);
    }
  }

  /** `preserveFocus`: opened by itself (agentServer.review.openDiff), the focus stays where the
   * user is (the panel's card answers by keys too). */
  private async show(before: vscode.Uri, after: vscode.Uri, path: string, kind: 'review' | 'made', preserveFocus = false): Promise<void> {
    const title = kind === 'review' ? `${path}: the agent's change (review, then accept or reject)` : `${path}: before the agent's change ↔ now`;
    await vscode.commands.executeCommand('vscode.diff', before, after, title, { preview: false, preserveFocus });
  }

  /** The review a command from the diff editor means: the resource it was given (either
   * side), else the active tab's, else the only one open. */
  private reviewOf(uri: vscode.Uri | undefined): Review | undefined {
    const reviews = [...this.reviews.values()];
    const of = (target: vscode.Uri | undefined): Review | undefined =>
      target && reviews.find((r) => r.proposed.toString() === target.toString() || r.before.toString() === target.toString());
    const tab = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
    const fromTab = tab instanceof vscode.TabInputTextDiff ? of(tab.modified) : undefined;
    return of(uri instanceof vscode.Uri ? uri : undefined) ?? fromTab ?? of(vscode.window.activeTextEditor?.document.uri) ?? (reviews.length === 1 ? reviews[0] : undefined);
  }

  private async accept(uri?: vscode.Uri): Promise<void> {
    const review = this.reviewOf(uri);
    if (!review) return;
    const document = vscode.workspace.textDocuments.find((d) => d.uri.toString() === review.proposed.toString());
    const text = document?.getText() ?? new TextDecoder().decode(this.proposed.readFile(review.proposed));
    if (document?.isDirty) await document.save(); // into memory: closing does not ask to save
    this.answers.accept(review.requestId, text === review.newText ? undefined : text);
  }

  private async reject(uri?: vscode.Uri): Promise<void> {
    const review = this.reviewOf(uri);
    if (!review) return;
    const message = await vscode.window.showInputBox({
      title: 'Reject the change',
      prompt: 'What should the agent do instead? (optional; Enter rejects)',
      ignoreFocusOut: true,
    });
    if (message === undefined) return; // Escape: still undecided
    const document = vscode.workspace.textDocuments.find((d) => d.uri.toString() === review.proposed.toString());
    if (document?.isDirty) await document.save();
    this.answers.reject(review.requestId, message.trim() || undefined);
  }

  private async close(uri: vscode.Uri): Promise<void> {
    const tabs = vscode.window.tabGroups.all.flatMap((group) => group.tabs);
    const open = tabs.filter((tab) => tab.input instanceof vscode.TabInputTextDiff && tab.input.modified.toString() === uri.toString());
    const document = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
    if (document?.isDirty) await document.save();
    if (open.length) await vscode.window.tabGroups.close(open);
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}

/** A diff side for a file as it was at an entry: its text, or why it is not shown. */
export function thenText(file: RewindChangesResult['files'][number]): string {
  if (!file.existed) return '';
  if (file.text !== undefined) return file.text;
  return `(${file.path} is not shown: ${file.omitted ?? 'not text'})\n`;
}
