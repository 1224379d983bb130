/**
 * What the editor knows: after the agent writes or edits a file, the errors and warnings the
 * editor's language servers publish for it that were not there before the change go back to
 * the agent (`agent/problems`), which tells the model on its next request. Only files the
 * language servers check are covered (open ones, or every file for a server that checks the
 * workspace): a file is never opened for it (an open file's edits go through its buffer).
 */
import * as vscode from 'vscode';
import type { AgentUpdateParams, Problem } from '../protocol/types';
import { editOf, introducedProblems, type SeenProblem } from '../state/problems';

/** How long the language servers get to publish after a change, and how long they must then
 * stay quiet (a server publishes in steps). */
const SETTLE_MS = 3000;
const QUIET_MS = 400;

export type ReportProblems = (sessionId: string, path: string, problems: Problem[]) => void;

export class ProblemsReporter {
  private readonly before = new Map<string, Map<string, SeenProblem[]>>();

  constructor(
    private readonly root: () => vscode.Uri | undefined,
    private readonly report: ReportProblems,
  ) {}

  /** Every agent/update of the sessions shown. */
  onUpdate(params: AgentUpdateParams): void {
    const edit = editOf(params);
    if (!edit) return;
    if (edit.phase === 'start') {
      const seen = new Map<string, SeenProblem[]>();
      for (const path of edit.paths) {
        const uri = this.uri(path);
        if (uri) seen.set(uri.toString(), problemsOf(uri));
      }
      this.before.set(edit.callId, seen);
      return;
    }
    const before = this.before.get(edit.callId);
    this.before.delete(edit.callId);
    const uri = this.uri(edit.path);
    if (!uri) return;
    void settled(uri).then(() => {
      const introduced = introducedProblems(before?.get(uri.toString()) ?? [], problemsOf(uri));
      if (introduced.length) this.report(params.sessionId, edit.path, introduced);
    });
  }

  private uri(path: string): vscode.Uri | undefined {
    if (path.startsWith('/')) return vscode.Uri.file(path);
    const root = this.root();
    return root ? vscode.Uri.joinPath(root, path) : undefined;
  }
}

function problemsOf(uri: vscode.Uri): SeenProblem[] {
  const out: SeenProblem[] = [];
  for (const d of vscode.languages.getDiagnostics(uri)) {
    const severity =
      d.severity === vscode.DiagnosticSeverity.Error ? 'error' : d.severity === vscode.DiagnosticSeverity.Warning ? 'warning' : undefined;
    if (!severity) continue;
    const code = typeof d.code === 'object' ? String(d.code.value) : d.code === undefined ? undefined : String(d.code);
    out.push({ line: d.range.start.line + 1, severity, message: d.message, ...(d.source ? { source: d.source } : {}), ...(code ? { code } : {}) });
  }
  return out;
}

/** Resolves once the file's diagnostics changed and then stayed quiet, or after SETTLE_MS. */
function settled(uri: vscode.Uri): Promise<void> {
  return new Promise((resolve) => {
    let quiet: ReturnType<typeof setTimeout> | undefined;
    const done = (): void => {
      listener.dispose();
      clearTimeout(limit);
      if (quiet) clearTimeout(quiet);
      resolve();
    };
    const limit = setTimeout(done, SETTLE_MS);
    const listener = vscode.languages.onDidChangeDiagnostics((event) => {
      if (!event.uris.some((u) => u.toString() === uri.toString())) return;
      if (quiet) clearTimeout(quiet);
      quiet = setTimeout(done, QUIET_MS);
    });
  });
}
