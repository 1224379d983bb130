/**
 * Text from the model, a file or a tool, shown literally (the same rule as the server's
 * agent_server/literal.py): control characters (C0, C1, DEL), bidirectional controls and
 * invisible format characters (zero-width space, word joiner, BOM, soft hyphen, tag
 * characters, line and paragraph separators, lone surrogates) become visible escapes in
 * Python's notation (`\x1b`, `\u202e`, `\U000e0041`), so nothing is hidden, reordered or made
 * to look like something else. Line breaks and tabs stay unless `keep` says otherwise; the
 * zero-width joiner and non-joiner stay (scripts and emoji need them).
 */
const INVISIBLE =
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b\u200e\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\u{e0000}-\u{e007f}\ud800-\udfff]/gu;
const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

export function escapeOf(char: string): string {
  const named = NAMED[char];
  if (named) return named;
  const code = char.codePointAt(0) ?? 0;
  if (code < 0x100) return `\\x${code.toString(16).padStart(2, '0')}`;
  if (code < 0x10000) return `\\u${code.toString(16).padStart(4, '0')}`;
  return `\\U${code.toString(16).padStart(8, '0')}`;
}

/** `text` with every character that would act instead of showing replaced by its escape.
 * `keep`: which of line break and tab stay as they are (default both). */
export function literal(text: string, keep: { newline?: boolean; tab?: boolean } = {}): string {
  const newline = keep.newline ?? true;
  const tab = keep.tab ?? true;
  const source = newline ? text.replace(/\r\n/g, '\n') : text;
  const replaced = source.replace(INVISIBLE, escapeOf);
  if (newline && tab) return replaced;
  return replaced.replace(newline ? /\t/g : tab ? /\n/g : /[\n\t]/g, escapeOf);
}

/** `text` for a VS Code notification (`showInformationMessage` and its kin): literal, and no
 * `[label](command:…)`, `https:` or `file:` link in it made clickable. A notification turns
 * such a text into a link (a command link runs the command with its arguments), so a path or
 * a message from the model, a file or a server would otherwise offer a click that acts. A word
 * joiner (invisible; in the text given, literal shows it as `\u2060`) goes between the `]` and
 * the `(`, which the notification's link pattern needs side by side. */
export function noticeText(text: string): string {
  return unlinked(literal(text));
}

/** `text` with a word joiner between every `]` and `(`: no `[label](target)` link in it. */
function unlinked(text: string): string {
  return text.replace(/\]\(/g, ']\u2060(');
}

/** VS Code's icon syntax, `$(name)` or `$(name~modifier)`: the pattern of its
 * `renderLabelWithIcons` (ThemeIcon's iconNameExpression and iconModifierExpression, VS Code
 * 1.139). */
const ICON = /\$\([A-Za-z0-9-]+(?:~[A-Za-z]+)?\)/g;

/** `text` for a VS Code label that draws `$(name)` as an icon: a quick pick item's label,
 * description and detail (and a status-bar item's text, a tree item's label). Literal on one
 * line (a line break or tab shows as `\n`, `\t`, as the label would otherwise fold it into a
 * space), every `$(name)` escaped with a backslash before it, the escape VS Code's own
 * `escapeIcons` uses (the label then shows `$(name)`, not an icon; a backslash already before
 * it gets one more, so it shows too), and no `[label](target)` link, as in `noticeText`: a
 * quick pick's hover shows the description and detail as Markdown. */
export function labelText(text: string): string {
  return unlinked(literal(text, { newline: false, tab: false })).replace(ICON, (icon) => `\\${icon}`);
}

/** ECMA-48's escape sequences (as the server's literal.py): CSI, the strings (OSC, DCS, PM,
 * APC, SOS) ended by BEL or ST, and the two-character ones (a CSI or a string begun and not
 * ended is none of them: its ESC stays, and shows as its escape). */
const ESCAPE_SEQUENCE = /\x1b\[[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b(?![[\]PX^_])[\x20-\x2f]*[\x30-\x7e]/g;
/** One escape sequence, whole, at the start of a text. */
export const WHOLE_ESCAPE = new RegExp(`^(?:${ESCAPE_SEQUENCE.source})`);
const SGR = /\x1b\[[0-9;:]*m/g;

/** A command's output for a VS Code terminal, which acts on escape sequences (the server's
 * `output_text`, with line breaks as the terminal wants them): its colours and styles (SGR)
 * kept, but none that conceals text; every other escape sequence taken out whole (a title,
 * OSC 52's clipboard, OSC 8's link, a cursor move, a screen clear); any other control or
 * invisible character shown as its escape (a lone ESC, a CR, U+202E); each line break as
 * CR LF. */
export function terminalText(text: string): string {
  let out = '';
  let start = 0;
  for (const colour of text.matchAll(SGR)) {
    const at = colour.index ?? 0;
    out += literal(text.slice(start, at).replace(ESCAPE_SEQUENCE, ''));
    if (!concealing(colour[0])) out += colour[0];
    start = at + colour[0].length;
  }
  out += literal(text.slice(start).replace(ESCAPE_SEQUENCE, ''));
  return out.replace(/\n/g, '\r\n');
}

/** Whether an SGR sequence hides text (8, conceal), a colour's own numbers aside. */
function concealing(sgr: string): boolean {
  const params = sgr.slice(2, -1).split(/[;:]/);
  for (let i = 0; i < params.length; i++) {
    const p = params[i];
    if (p === '38' || p === '48' || p === '58') i += params[i + 1] === '5' ? 2 : params[i + 1] === '2' ? 4 : 0;
    else if (p === '8') return true;
  }
  return false;
}
