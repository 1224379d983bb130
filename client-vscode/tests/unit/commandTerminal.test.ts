import { describe, expect, it } from 'vitest';
import { CommandMirror, endOf } from '../../src/editor/commandTerminal';
import { CommandTerminals } from '../../src/editor/commandTerminals';
import type { AgentUpdateParams, SessionUpdate, ToolInputParams } from '../../src/protocol/types';
import { createdTerminals } from '../support/vscode-stub';
import { terminalText } from '../../src/webview/literal';

function mirror(): { mirror: CommandMirror; screen: string[]; inputs: ToolInputParams[] } {
  const screen: string[] = [];
  const inputs: ToolInputParams[] = [];
  const m = new CommandMirror('s1', (text) => screen.push(text), {
    input: (params) => inputs.push(params),
  });
  return { mirror: m, screen, inputs };
}

const call = (command: string, id = 'c1'): SessionUpdate => ({
  kind: 'toolCall', toolCallId: id, title: `Run: ${command}`, toolKind: 'execute', status: 'pending', rawInput: { command }, locations: [],
});
const running = (id = 'c1', text?: string): SessionUpdate => ({
  kind: 'toolCallUpdate', toolCallId: id, status: 'in_progress',
  ...(text === undefined ? {} : { content: [{ type: 'content', content: { type: 'text', text } }] }),
});
const ended = (status: 'completed' | 'failed', rawOutput: unknown, id = 'c1'): SessionUpdate => ({
  kind: 'toolCallUpdate', toolCallId: id, status, content: [{ type: 'content', content: { type: 'text', text: 'the whole result' } }], rawOutput,
});

describe('the terminal of a session\'s commands', () => {
  it('shows the command line when it starts, its output as it streams in CR LF, and how it ended', () => {
    const { mirror: m, screen } = mirror();
    expect(m.update(call('npm test'))).toBe(false); // announced: it may still be refused
    expect(screen).toEqual([]);
    expect(m.update(running())).toBe(true);
    expect(screen.join('')).toBe('\x1b[1m$ \x1b[0mnpm test\r\n');
    screen.length = 0;
    m.update(running('c1', '\x1b[32mPASS\x1b[0m one\nline two\n'));
    expect(screen.join('')).toBe('\x1b[32mPASS\x1b[0m one\r\nline two\r\n');
    screen.length = 0;
    m.update(ended('completed', { exitCode: 0, timedOut: false }));
    // The result (already streamed) is not written again.
    expect(screen.join('')).toBe('\x1b[0m\x1b[2m[exit status 0]\x1b[0m\r\n');
    expect(m.busy).toBe(false);
  });

  it('puts the end on a line of its own, and says a failure, a stop and a timeout', () => {
    const { mirror: m, screen } = mirror();
    m.update(call('false; printf half'));
    m.update(running('c1', 'half'));
    m.update(ended('failed', { exitCode: 1, timedOut: false }));
    expect(screen.join('')).toContain('half\x1b[0m\r\n\x1b[2m\x1b[31m[exit status 1]');
    expect(endOf('failed', { aborted: true })).toBe('stopped');
    expect(endOf('failed', { exitCode: null, timedOut: true })).toBe('timed out: killed');
    expect(endOf('failed', { exitCode: -9, timedOut: false })).toBe('killed by signal 9');
  });

  it('keeps colours but takes other escape sequences out, and shows control characters', () => {
    expect(terminalText('\x1b]0;title\x07\x1b]52;c;cGF5bG9hZA==\x07\x1b[2J\x1b[31mred\x1b[0m a\rb\u202e')).toBe('\x1b[31mred\x1b[0m a\\rb\\u202e');
    expect(terminalText('\x1b[8mhidden\x1b[0m \x1b[38;5;8mgrey')).toBe('hidden\x1b[0m \x1b[38;5;8mgrey');
    // An escape sequence cut between two chunks is written whole, once the rest comes.
    const { mirror: m, screen } = mirror();
    m.update(call('ls --color'));
    m.update(running());
    screen.length = 0;
    m.update(running('c1', 'a \x1b[3'));
    m.update(running('c1', '4mblue\x1b[0m\r'));
    m.update(running('c1', '\n'));
    expect(screen.join('')).toBe('a \x1b[34mblue\x1b[0m\r\n');
  });

  it('shows nothing of a call that is not a command, or of one that never ran', () => {
    const { mirror: m, screen } = mirror();
    m.update({ kind: 'toolCall', toolCallId: 'c1', title: 'Read a.py', toolKind: 'read', status: 'pending', rawInput: { path: 'a.py' } });
    m.update(running());
    m.update(call('rm -rf build', 'c2'));
    m.update(ended('failed', { permission: 'denied', reason: 'the user rejected bash' }, 'c2'));
    expect(screen).toEqual([]);
  });

  it('echoes a typed line, lets Backspace edit it, and sends it on Enter to the running call', () => {
    const { mirror: m, screen, inputs } = mirror();
    m.update(call('read name; echo hello $name'));
    m.update(running());
    screen.length = 0;
    m.handleInput('worlx');
    m.handleInput('\x7f');
    m.handleInput('d\x1b[A\r'); // an arrow key is not text
    expect(screen.join('')).toBe('worlx\b \bd\r\n');
    expect(inputs).toEqual([{ sessionId: 's1', toolCallId: 'c1', data: 'world\n' }]);
    m.handleInput('one\rtwo\r'); // a paste: each line on its own
    expect(inputs.slice(1).map((i) => i.data)).toEqual(['one\n', 'two\n']);
  });

  it('ends the input on Ctrl-D, with what was typed, and interrupts the command on Ctrl-C', () => {
    const { mirror: m, inputs, screen } = mirror();
    m.update(call('cat'));
    m.update(running());
    m.handleInput('tail\x04');
    expect(inputs).toEqual([{ sessionId: 's1', toolCallId: 'c1', data: 'tail', end: true }]);
    m.handleInput('\x04');
    expect(inputs[1]).toEqual({ sessionId: 's1', toolCallId: 'c1', data: '', end: true });
    screen.length = 0;
    m.handleInput('x\x03');
    expect(screen.join('')).toBe('x^C\r\n');
    // The half-typed line is not sent: Ctrl-C alone, for the command that runs.
    expect(inputs.slice(2)).toEqual([{ sessionId: 's1', toolCallId: 'c1', data: '', interrupt: true }]);
  });

  it('sends nothing when no command runs: a bell', () => {
    const { mirror: m, inputs, screen } = mirror();
    m.handleInput('hello\r\x03');
    m.update(call('true'));
    m.update(running());
    m.update(ended('completed', { exitCode: 0 }));
    screen.length = 0;
    m.handleInput('late\r');
    expect(inputs).toEqual([]);
    expect(screen).toEqual(['\x07']);
  });
});

describe('the terminals of the sessions\' commands in VS Code', () => {
  const update = (sessionId: string, u: SessionUpdate): AgentUpdateParams => ({ sessionId, turnId: 't', seq: 0, update: u });

  function terminals(enabled: { on: boolean }) {
    const inputs: ToolInputParams[] = [];
    const made = new CommandTerminals({
      enabled: () => enabled.on,
      title: (sessionId) => (sessionId === 's1' ? 'Fix the $(alert) tests' : undefined),
      input: (params) => inputs.push(params),
    });
    return { made, inputs };
  }

  it('open one per session at its first command, named after it, without taking the focus', () => {
    createdTerminals.length = 0;
    const { made, inputs } = terminals({ on: true });
    made.onUpdate(update('s1', call('make')));
    expect(createdTerminals).toHaveLength(0); // announced, not running: no terminal yet
    made.onUpdate(update('s1', running('c1', 'building\n')));
    made.onUpdate(update('s2', call('ls', 'c9')));
    made.onUpdate(update('s2', running('c9')));
    expect(createdTerminals.map((t) => t.options.name)).toEqual(['Agent: Fix the \\$(alert) tests', 'Agent: session']);
    expect(createdTerminals[0]?.shownPreservingFocus).toEqual([true]);
    // What was written before VS Code opened the terminal is shown once it does.
    const [first] = createdTerminals;
    const screen: string[] = [];
    first?.options.pty.onDidWrite((text) => screen.push(text));
    first?.options.pty.open();
    expect(screen.join('')).toBe('\x1b[1m$ \x1b[0mmake\r\nbuilding\r\n');
    first?.options.pty.handleInput?.('y\r');
    expect(inputs).toEqual([{ sessionId: 's1', toolCallId: 'c1', data: 'y\n' }]);
    // The next command of the session goes to the same terminal.
    made.onUpdate(update('s1', ended('completed', { exitCode: 0 })));
    made.onUpdate(update('s1', call('make test', 'c2')));
    made.onUpdate(update('s1', running('c2')));
    expect(createdTerminals).toHaveLength(2);
    expect(screen.join('')).toContain('$ \x1b[0mmake test\r\n');
    made.dispose();
  });

  it('open again after the user closed one, and not at all with the setting off', () => {
    createdTerminals.length = 0;
    const enabled = { on: false };
    const { made } = terminals(enabled);
    made.onUpdate(update('s1', call('make')));
    made.onUpdate(update('s1', running()));
    expect(createdTerminals).toHaveLength(0);
    enabled.on = true;
    made.onUpdate(update('s1', call('make', 'c2')));
    made.onUpdate(update('s1', running('c2')));
    createdTerminals[0]?.options.pty.close(); // the user closed it
    made.onUpdate(update('s1', call('make', 'c3')));
    made.onUpdate(update('s1', running('c3')));
    expect(createdTerminals).toHaveLength(2);
    made.dispose();
  });
});
