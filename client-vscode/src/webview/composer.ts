/**
 * What the prompt box adds to plain typing: @-mention completion (the server lists workspace
 * paths; the text keeps `@path`, and the server attaches what it names when the prompt is
 * sent) and images pasted or dropped into the box (sent as image blocks with the text).
 * Pure helpers here; the DOM lives in render.ts.
 */
import type { ImageContent, MentionItem, PromptCommandItem } from '../protocol/types';

/** The image types every provider accepts (the server refuses others). */
export const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'] as const;
/** Per image, as the providers limit it (Anthropic: 5 MB). */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;
export const MAX_IMAGES = 10;

/** The @-mention being typed at the caret: where its `@` is and what follows it. */
export interface MentionToken {
  start: number;
  end: number;
  query: string;
}

/** The mention the caret is in (an `@` at the start or after whitespace, up to the caret). */
export function mentionAt(text: string, caret: number): MentionToken | undefined {
  const before = text.slice(0, caret);
  const match = /(?:^|\s)@("?)([^\s"@]*)$/.exec(before);
  if (!match) return undefined;
  const query = match[2] ?? '';
  const start = caret - query.length - (match[1] ?? '').length - 1;
  return { start, end: caret, query };
}

/** A command the `/` menu offers: the panel's own, or a prompt command the server lists. */
export interface CommandChoice {
  name: string;
  description: string;
  /** What to type after it ("" when nothing). */
  hint: string;
}

/** The panel's own commands (the controller runs them instead of sending a prompt). */
export const PANEL_COMMANDS: readonly CommandChoice[] = [
  { name: 'remember', description: 'pin a rule for the session (fact: text pins a fact); carried across every compaction', hint: '[fact:] text' },
];

/** The `/command` being typed: a `/` at the start of the box, the caret still in its name. */
export function commandAt(text: string, caret: number): MentionToken | undefined {
  const match = /^\/([^\s/]*)$/.exec(text.slice(0, caret));
  return match ? { start: 0, end: caret, query: match[1] ?? '' } : undefined;
}

/** The commands whose name starts with `query`: the panel's first, then the server's (yours,
 * then the workspace's); a name offered once. */
export function commandChoices(listed: readonly PromptCommandItem[], query: string): CommandChoice[] {
  const wanted = query.toLowerCase();
  const seen = new Set<string>();
  const out: CommandChoice[] = [];
  for (const command of [...PANEL_COMMANDS, ...listed]) {
    if (seen.has(command.name) || !command.name.toLowerCase().startsWith(wanted)) continue;
    seen.add(command.name);
    out.push({ name: command.name, description: command.description, hint: command.hint });
  }
  return out;
}

/** The text with the command being typed replaced by `/name `. */
export function applyCommand(text: string, token: MentionToken, name: string): { text: string; caret: number } {
  const insert = `/${name} `;
  const after = text.slice(token.end).replace(/^\S*\s?/, '');
  return { text: insert + after, caret: insert.length };
}

/** The text with the mention replaced by a completion: `@path ` (quoted when it has spaces);
 * a folder keeps the caret after its `/`, to go on into it. */
export function applyMention(text: string, token: MentionToken, item: MentionItem): { text: string; caret: number } {
  const folder = item.kind === 'directory';
  const written = /\s|"/.test(item.path) ? `@"${item.path}"` : `@${item.path}`;
  const insert = folder && !written.endsWith('"') ? written : `${written} `;
  const after = text.slice(token.end);
  return { text: text.slice(0, token.start) + insert + after, caret: token.start + insert.length };
}

/** The @-mentions for files dropped from the editor's explorer (a `text/uri-list`): each
 * workspace file or folder as `@path` (quoted when it has spaces); anything outside the
 * workspace is left out. */
export function mentionsFromUris(uriList: string, workspaceUri: string): string[] {
  const root = workspaceUri.replace(/\/+$/, '') + '/';
  const out: string[] = [];
  for (const line of uriList.split(/\r?\n/)) {
    const uri = line.trim();
    if (!uri || uri.startsWith('#') || !uri.startsWith(root)) continue;
    let path: string;
    try {
      path = decodeURIComponent(uri.slice(root.length));
    } catch {
      continue;
    }
    if (!path || path.split('/').includes('..')) continue;
    out.push(/\s|"/.test(path) ? `@"${path}"` : `@${path}`);
  }
  return out;
}

/** Why an image cannot be attached, or undefined when it can. */
export function imageProblem(mimeType: string, bytes: number, attached: number): string | undefined {
  if (!(IMAGE_TYPES as readonly string[]).includes(mimeType)) {
    return `${mimeType || 'This file'} is not an image the models take (PNG, JPEG, GIF or WebP).`;
  }
  if (bytes > MAX_IMAGE_BYTES) return `The image is ${(bytes / 1024 / 1024).toFixed(1)} MB; the limit is 5 MB.`;
  if (attached >= MAX_IMAGES) return `At most ${MAX_IMAGES} images per prompt.`;
  return undefined;
}

/** An image block from a `data:` URL (FileReader.readAsDataURL). */
export function imageFromDataUrl(url: string): ImageContent | undefined {
  const match = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (!match) return undefined;
  return { type: 'image', mimeType: match[1] ?? '', data: match[2] ?? '' };
}

/** The `data:` URL that shows an image block, only for the image types above (anything else
 * is not shown as an image). */
export function imageSrc(image: ImageContent): string | undefined {
  if (!(IMAGE_TYPES as readonly string[]).includes(image.mimeType)) return undefined;
  if (!/^[A-Za-z0-9+/=\s]*$/.test(image.data)) return undefined;
  return `data:${image.mimeType};base64,${image.data}`;
}
