/**
 * "Agent: Add to Chat": the open file, or the lines selected in it, as an @-mention the prompt
 * box takes (`@src/app.py`, `@src/app.py#L10-20`); the server attaches what it names when the
 * prompt is sent (docs/protocol.md, @-mentions). Pure: extension.ts gives it the editor's path
 * and selection.
 */

/** A selection as VS Code has it: zero-based lines, the end's column. */
export interface SelectedLines {
  startLine: number;
  endLine: number;
  endCharacter: number;
  isEmpty: boolean;
}

/** The mention of `relativePath` (workspace-relative, POSIX), with the selected lines when
 * something is selected; quoted when the path holds white space. Undefined for a path the
 * mention syntax cannot carry (one with a double quote). */
export function mentionOf(relativePath: string, selection?: SelectedLines): string | undefined {
  if (relativePath.includes('"') || !relativePath) return undefined;
  let lines = '';
  if (selection && !selection.isEmpty) {
    const first = selection.startLine + 1;
    // A selection that ends at the start of a line does not take that line.
    const last = selection.endLine + 1 - (selection.endCharacter === 0 && selection.endLine > selection.startLine ? 1 : 0);
    lines = first === last ? `#L${first}` : `#L${first}-${last}`;
  }
  const target = relativePath + lines;
  return /\s/.test(target) ? `@"${target}"` : `@${target}`;
}

/** `file`'s path relative to the folder `root` (both POSIX paths, as a file URI's path), or
 * undefined when it is not inside it. */
export function insideFolder(root: string, file: string): string | undefined {
  const folder = root.endsWith('/') ? root : `${root}/`;
  return file.startsWith(folder) && file.length > folder.length ? file.slice(folder.length) : undefined;
}
