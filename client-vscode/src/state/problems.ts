/**
 * What an edit of the agent's broke, as the editor's language servers see it (no `vscode`
 * import: src/editor/problems.ts feeds it the editor's diagnostics). docs/protocol.md,
 * `agent/problems`.
 */
import type { AgentUpdateParams, Problem } from '../protocol/types';

/** One diagnostic as the editor reports it, errors and warnings only. */
export interface SeenProblem extends Problem {
  code?: string;
}

/**
 * The problems of `after` that `before` did not have: compared by severity, message, source
 * and code, not by line (an edit moves lines), as many of each as are new.
 */
export function introducedProblems(before: readonly SeenProblem[], after: readonly SeenProblem[]): Problem[] {
  const key = (p: SeenProblem): string => JSON.stringify([p.severity, p.message, p.source ?? '', p.code ?? '']);
  const left = new Map<string, number>();
  for (const p of before) left.set(key(p), (left.get(key(p)) ?? 0) + 1);
  const out: Problem[] = [];
  for (const p of after) {
    const k = key(p);
    const remaining = left.get(k) ?? 0;
    if (remaining > 0) {
      left.set(k, remaining - 1);
      continue;
    }
    out.push({ line: p.line, severity: p.severity, message: p.message, ...(p.source ? { source: p.source } : {}) });
  }
  return out;
}

/** What an update says of the agent's edits: a write or edit starting (the files it names),
 * or one that changed a file (its path), or nothing. */
export function editOf(
  params: AgentUpdateParams,
): { phase: 'start'; callId: string; paths: string[] } | { phase: 'changed'; callId: string; path: string } | undefined {
  const u = params.update;
  if (u.kind === 'toolCall' && u.toolKind === 'edit' && u.locations?.length) {
    return { phase: 'start', callId: u.toolCallId, paths: u.locations.map((l) => l.path) };
  }
  if (u.kind === 'toolCallUpdate' && u.status === 'completed') {
    const diff = u.content?.find((c) => c.type === 'diff');
    if (diff && diff.type === 'diff') return { phase: 'changed', callId: u.toolCallId, path: diff.path };
  }
  return undefined;
}
