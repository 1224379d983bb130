/**
 * What VS Code draws for a label that supports icons (a quick pick item's label, description
 * and detail; a status-bar item's text): its `renderLabelWithIcons`, as the workbench of VS
 * Code 1.139 has it (code-server's lib/vscode/out/vs/code/browser/workbench/workbench.js):
 * `$(name)` becomes an icon, `\$(name)` the text `$(name)`.
 */
const RENDER_LABEL_WITH_ICONS = /(\\)?\$\(([A-Za-z0-9-]+(?:~[A-Za-z]+)?)\)/g;

/** The label as drawn: its text, and each icon as `<icon:name>`. */
export function drawnLabel(label: string): string {
  return label.replace(RENDER_LABEL_WITH_ICONS, (_match, escaped: string | undefined, name: string) =>
    escaped ? `$(${name})` : `<icon:${name}>`,
  );
}
