/**
 * What to tell the user when the server cannot start: a sentence that says what to run, never
 * a stack trace. Pure (no `vscode`), so it is unit tested.
 */

export type InterpreterSource = 'setting' | 'python-extension' | 'default';

export interface LaunchFailure {
  interpreter: string;
  source: InterpreterSource;
  /** A spawn error (`code` is e.g. ENOENT, EACCES). */
  error?: { code?: string; message?: string };
  /** What the process wrote to stderr (the tail is enough). */
  stderr?: string;
  exitCode?: number | null;
}

export interface LaunchAdvice {
  /** One or two sentences for a notification and the view's banner. */
  message: string;
  /** A command line that fixes it, when there is one. */
  fix?: string;
}

const MIN_PYTHON = '3.11';

function where(source: InterpreterSource): string {
  switch (source) {
    case 'setting':
      return ' (from the setting agentServer.python)';
    case 'python-extension':
      return " (the Python extension's active interpreter)";
    case 'default':
      return '';
  }
}

export function describeLaunchFailure(f: LaunchFailure): LaunchAdvice {
  const py = f.interpreter;
  const code = f.error?.code;
  if (code === 'ENOENT' || /ENOENT|not found|No such file/i.test(f.error?.message ?? '')) {
    return {
      message:
        `Python interpreter not found: ${py}${where(f.source)}. ` +
        `Set agentServer.python to a Python ${MIN_PYTHON}+ interpreter that has agent-server installed.`,
    };
  }
  if (code === 'EACCES') {
    return { message: `Cannot run ${py}${where(f.source)}: permission denied. Set agentServer.python.` };
  }
  const stderr = f.stderr ?? '';
  const missing = /No module named ['"]?([\w.]+)['"]?/.exec(stderr);
  if (missing) {
    const module = missing[1] ?? '';
    const fix = `${quote(py)} -m pip install agent-server`;
    if (module === 'agent_server' || module.startsWith('agent_server.')) {
      return {
        message:
          `The agent server is not installed in ${py}${where(f.source)}. ` +
          `Install the server: \`pip install agent-server\` in that interpreter (${fix}), ` +
          'or set agentServer.python to the .venv/bin/python of a checkout where `make` has run.',
        fix,
      };
    }
    return {
      message:
        `agent-server in ${py} is missing its dependency "${module}". ` +
        `Reinstall it: \`${fix}\` (or \`pip install -e .\` in a checkout).`,
      fix,
    };
  }
  if (/version_info|SyntaxError|requires a different Python|Python 3\.1[01]|Python 3\.[0-9]\b/.test(stderr)) {
    return {
      message: `agent-server needs Python ${MIN_PYTHON} or newer; ${py}${where(f.source)} is older. Set agentServer.python.`,
    };
  }
  const last = lastMeaningfulLine(stderr);
  const exit = f.exitCode !== undefined && f.exitCode !== null ? ` (exit code ${f.exitCode})` : '';
  return {
    message:
      `The agent server stopped${exit}` +
      (last ? `: ${last}` : '.') +
      ' See the "Agent Server" output for its log.',
  };
}

function quote(path: string): string {
  return /[\s"'$]/.test(path) ? JSON.stringify(path) : path;
}

/** The last line of a log or traceback that says something (the exception line). */
export function lastMeaningfulLine(text: string): string | undefined {
  const lines = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('File "') && !/^\^+$/.test(l) && l !== 'Traceback (most recent call last):');
  const line = lines[lines.length - 1];
  if (!line) return undefined;
  return line.length > 300 ? `${line.slice(0, 297)}…` : line;
}

/** The server logs `asctime LEVEL name: message` to stderr; pick the level for the output channel. */
export function logLevelOf(line: string): 'error' | 'warn' | 'info' | 'debug' | 'trace' {
  const m = /\b(CRITICAL|ERROR|WARNING|INFO|DEBUG)\b/.exec(line.slice(0, 60));
  switch (m?.[1]) {
    case 'CRITICAL':
    case 'ERROR':
      return 'error';
    case 'WARNING':
      return 'warn';
    case 'INFO':
      return 'info';
    case 'DEBUG':
      return 'debug';
    default:
      // Tracebacks and other raw output.
      return 'info';
  }
}

/** A bounded tail of the server's stderr, for `describeLaunchFailure`. */
export class StderrTail {
  private lines: string[] = [];
  constructor(private readonly max = 60) {}
  push(line: string): void {
    this.lines.push(line);
    if (this.lines.length > this.max) this.lines.splice(0, this.lines.length - this.max);
  }
  clear(): void {
    this.lines = [];
  }
  toString(): string {
    return this.lines.join('\n');
  }
}
