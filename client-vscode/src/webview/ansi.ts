/**
 * Colours in command output: ANSI SGR sequences (`\x1b[32mPASSED\x1b[0m`) as coloured text.
 *
 * anser (MIT; the parser behind nteract's ansi-to-react, maintained) parses the output into
 * chunks of text with their colours and decorations; the view builds them as DOM nodes whose
 * text is set as text, so nothing in the output is ever parsed as markup (stronger than
 * escaping an HTML string: there is no string). Only colour and style codes (SGR) are read: any other escape, and a
 * code that would conceal text, is shown as `\x1b[...]`. The 16 colours are the terminal theme's
 * (`--vscode-terminal-ansi*`); 256-colour and true-colour codes are set through the CSSOM,
 * which the webview's Content-Security-Policy allows (an inline `style` attribute it does not).
 * What anser leaves (a cursor move, an OSC sequence) is shown by `literal` as escapes.
 */
import Anser from 'anser';
import { literal } from './literal';

const NAMED = new Set(['black', 'red', 'green', 'yellow', 'blue', 'magenta', 'cyan', 'white']);
// Not "hidden" (SGR 8, conceal), nor blink: nothing in output is hidden or made to move.
const DECORATIONS = new Set(['bold', 'dim', 'italic', 'underline', 'reverse', 'strikethrough']);
const ESCAPE = /\x1b\[[0-9;]*m/;
const ANY_ESCAPE = /\x1b(\[[0-9;]*m)?/g;

/** Whether `text` holds colour codes at all (most output does not: it stays one text node). */
export function hasAnsi(text: string): boolean {
  return ESCAPE.test(text);
}

/** `text` as nodes: plain text, and spans for coloured or decorated runs. */
export function ansiNodes(text: string): Node[] {
  if (!hasAnsi(text)) return [document.createTextNode(literal(text))];
  const nodes: Node[] = [];
  // Only colour and style codes are read; every other escape (a cursor move, clearing the
  // screen, concealed text) stays visible, as `literal` shows it.
  const styledOnly = text.replace(ANY_ESCAPE, (escape, sgr: string | undefined) => (sgr && !conceals(sgr) ? escape : `\\x1b${sgr ?? ''}`));
  for (const chunk of Anser.ansiToJson(styledOnly, { use_classes: true, remove_empty: true })) {
    const content = literal(chunk.content);
    const classes: string[] = [];
    const fg = colourClass(chunk.fg, 'fg');
    const bg = colourClass(chunk.bg, 'bg');
    if (fg) classes.push(fg);
    if (bg) classes.push(bg);
    for (const decoration of chunk.decorations ?? []) if (DECORATIONS.has(decoration)) classes.push(`ansi-${decoration}`);
    if ((chunk as unknown as { isInverted?: boolean }).isInverted) classes.push('ansi-reverse');
    const fgRgb = rgbOf(chunk.fg, chunk.fg_truecolor);
    const bgRgb = rgbOf(chunk.bg, chunk.bg_truecolor);
    if (!classes.length && !fgRgb && !bgRgb) {
      nodes.push(document.createTextNode(content));
      continue;
    }
    const span = document.createElement('span');
    span.className = classes.join(' ');
    span.textContent = content;
    if (fgRgb) span.style.color = fgRgb;
    if (bgRgb) span.style.backgroundColor = bgRgb;
    nodes.push(span);
  }
  return nodes;
}

/** Whether an SGR code (`[1;8m`) turns on concealed text (8), colour arguments aside. */
function conceals(sgr: string): boolean {
  const params = sgr.slice(1, -1).split(';');
  for (let i = 0; i < params.length; i++) {
    const p = params[i];
    if (p === '38' || p === '48' || p === '58') i += params[i + 1] === '5' ? 2 : params[i + 1] === '2' ? 4 : 0;
    else if (p === '8') return true;
  }
  return false;
}

/** `ansi-red` / `ansi-bright-red` as our class (`ansi-fg-red`, `ansi-bg-bright-red`). */
function colourClass(value: string | null | undefined, where: 'fg' | 'bg'): string | undefined {
  if (!value) return undefined;
  const name = value.replace(/^ansi-/, '');
  const base = name.replace(/^bright-/, '');
  return NAMED.has(base) ? `ansi-${where}-${name}` : undefined;
}

/** The colour of a 256-colour (`ansi-palette-N`) or true-colour (`r, g, b`) code. */
function rgbOf(value: string | null | undefined, truecolor: string | null | undefined): string | undefined {
  if (value === 'ansi-truecolor' && truecolor && /^\d{1,3}, ?\d{1,3}, ?\d{1,3}$/.test(truecolor)) return `rgb(${truecolor})`;
  const palette = /^ansi-palette-(\d+)$/.exec(value ?? '');
  if (!palette) return undefined;
  const index = Number(palette[1]);
  if (index < 16) return undefined; // the 16 named colours come as classes
  if (index >= 232) {
    const level = 8 + (index - 232) * 10;
    return `rgb(${level}, ${level}, ${level})`;
  }
  const cube = index - 16;
  const step = (n: number): number => (n === 0 ? 0 : 55 + n * 40);
  return `rgb(${step(Math.floor(cube / 36))}, ${step(Math.floor(cube / 6) % 6)}, ${step(cube % 6)})`;
}
