/**
 * A session's commands as a terminal shows them (issue 47, `agentServer.tools.terminal.visible`):
 * each command the agent runs as a prompt line, its output as it streams (colours kept, other
 * escape sequences out: `terminalText`), and how it ended; what the user types while one runs
 * goes to it (`agent/tool/input`). The command runs in the server, in its sandbox, with a pipe
 * for its input, not a terminal: so this is the line discipline a terminal would give it. The
 * line typed is echoed and can be edited (Backspace) and goes on Enter; Ctrl-D sends what is
 * typed and ends the command's input; Ctrl-C interrupts the command (SIGINT to its processes,
 * as a terminal's Ctrl-C: the turn goes on, and the model is told; the panel's stop ends the
 * turn). No `vscode` import: commandTerminals.ts puts it in a `vscode.Pseudoterminal`.
 */
import type { SessionUpdate, ToolInputParams } from '../protocol/types';
import { terminalText, WHOLE_ESCAPE } from '../webview/literal';

export interface CommandTerminalHooks {
  /** What the user typed, or Ctrl-C, for the running command (`agent/tool/input`). */
  input(params: ToolInputParams): void;
}

const DIM = '\x1b[2m';
const BOLD = '\x1b[1m';
const RED = '\x1b[31m';
const RESET = '\x1b[0m';
const BELL = '\x07';

/** Where the end of a chunk that may go on in the next one starts (a CR before its LF, the
 * start of an escape sequence): that end waits for the next chunk; else `text.length`. */
function unfinishedAt(text: string): number {
  if (text.endsWith('\r')) return text.length - 1;
  const at = text.lastIndexOf('\x1b');
  if (at < 0 || text.length - at > 64 || WHOLE_ESCAPE.test(text.slice(at))) return text.length;
  return at;
}

/** How a command ended, from its last update (the bash tool's `rawOutput`). */
export function endOf(status: string, rawOutput: unknown): string {
  const raw = (typeof rawOutput === 'object' && rawOutput !== null ? rawOutput : {}) as Record<string, unknown>;
  if (raw.aborted === true) return 'stopped';
  if (raw.timedOut === true) return 'timed out: killed';
  const code = raw.exitCode;
  if (typeof code === 'number') return code < 0 ? `killed by signal ${-code}` : `exit status ${code}`;
  return status === 'completed' ? 'done' : 'failed';
}

export class CommandMirror {
  /** The commands announced and not ended, by call id. */
  private readonly commands = new Map<string, string>();
  /** The call whose command runs now, which what is typed goes to. */
  private running: string | undefined;
  private line = '';
  /** The end of the last chunk, held until the next shows whether it was whole. */
  private held = '';
  private atLineStart = true;

  constructor(
    readonly sessionId: string,
    private readonly write: (text: string) => void,
    private readonly hooks: CommandTerminalHooks,
  ) {}

  /** Whether a command runs now (what is typed goes to it). */
  get busy(): boolean {
    return this.running !== undefined;
  }

  /** An update of the session; true when it started a command (the host shows the terminal). */
  update(update: SessionUpdate): boolean {
    if (update.kind === 'toolCall') {
      const input = update.rawInput as { command?: unknown } | null;
      if (update.toolKind === 'execute' && typeof input?.command === 'string') this.commands.set(update.toolCallId, input.command);
      return false;
    }
    if (update.kind !== 'toolCallUpdate') return false;
    const command = this.commands.get(update.toolCallId);
    if (command === undefined) return false;
    if (update.status === 'completed' || update.status === 'failed') {
      this.end(update.toolCallId, endOf(update.status, update.rawOutput));
      return false;
    }
    if (this.running !== update.toolCallId) return this.start(update.toolCallId, command, update.content);
    this.output(update.content);
    return false;
  }

  /** Keys from the terminal (`Pseudoterminal.handleInput`): a paste comes as one string. */
  handleInput(data: string): void {
    const call = this.running;
    if (call === undefined) {
      this.write(BELL); // nothing runs: nothing takes input (a bell moves no cursor)
      return;
    }
    let typed = '';
    for (const char of data.replace(/\x1b(?:\[[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]|O.)?/g, '')) {
      if (char === '\r' || char === '\n') {
        this.send(call, `${this.line}\n`, false);
        this.line = '';
        typed += '\r\n';
      } else if (char === '\x7f' || char === '\b') {
        if (this.line) {
          this.line = [...this.line].slice(0, -1).join('');
          typed += '\b \b';
        }
      } else if (char === '\x04') {
        this.put(typed);
        typed = '';
        this.send(call, this.line, true);
        this.line = '';
      } else if (char === '\x03') {
        this.put(`${typed}^C\r\n`);
        this.line = ''; // a terminal's Ctrl-C drops the line typed, too
        this.hooks.input({ sessionId: this.sessionId, toolCallId: call, data: '', interrupt: true });
        return;
      } else if (char >= ' ' || char === '\t') {
        this.line += char;
        typed += terminalText(char);
      }
    }
    this.put(typed);
  }

  private send(toolCallId: string, data: string, end: boolean): void {
    this.hooks.input(end ? { sessionId: this.sessionId, toolCallId, data, end } : { sessionId: this.sessionId, toolCallId, data });
  }

  private start(call: string, command: string, content: unknown): boolean {
    if (this.running !== undefined) this.end(this.running, 'ended');
    this.running = call;
    this.line = '';
    this.put(`${BOLD}$ ${RESET}${terminalText(command).replace(/\r\n/g, '\r\n  ')}\r\n`);
    this.output(content);
    return true;
  }

  private output(content: unknown): void {
    if (!Array.isArray(content)) return;
    let text = this.held;
    for (const item of content as { type?: string; content?: { type?: string; text?: unknown } }[]) {
      if (item.type === 'content' && item.content?.type === 'text' && typeof item.content.text === 'string') text += item.content.text;
    }
    const cut = unfinishedAt(text);
    this.held = text.slice(cut);
    this.put(terminalText(text.slice(0, cut)));
  }

  private end(call: string, how: string): void {
    this.commands.delete(call);
    if (this.running !== call) return; // it never ran (not allowed): nothing was shown
    this.running = undefined;
    const rest = this.held;
    this.held = '';
    this.line = '';
    if (rest) this.put(terminalText(rest));
    // On a line of its own, whether the output ended with a line break or not.
    const colour = how === 'exit status 0' || how === 'done' ? DIM : `${DIM}${RED}`;
    this.put(`${RESET}${this.atLineStart ? '' : '\r\n'}${colour}[${how}]${RESET}\r\n`);
  }

  /** Writes `text` to the terminal, noting whether the cursor is then at a line's start. */
  private put(text: string): void {
    if (!text) return;
    this.atLineStart = text.endsWith('\n');
    this.write(text);
  }
}
