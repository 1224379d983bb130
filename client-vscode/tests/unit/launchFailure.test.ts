import { describe, expect, it } from 'vitest';
import { describeLaunchFailure, lastMeaningfulLine, logLevelOf, StderrTail } from '../../src/server/launchFailure';

describe('launch failure advice', () => {
  it('tells how to install the server when the package is missing', () => {
    const advice = describeLaunchFailure({
      interpreter: '/usr/bin/python3',
      source: 'default',
      stderr: "Traceback (most recent call last):\n  File \"<string>\", line 4, in <module>\nModuleNotFoundError: No module named 'agent_server'\n",
      exitCode: 1,
    });
    expect(advice.message).toContain('pip install agent-server');
    expect(advice.message).toContain('/usr/bin/python3');
    expect(advice.message).toContain('agentServer.python');
    expect(advice.message).not.toContain('Traceback');
    expect(advice.fix).toBe('/usr/bin/python3 -m pip install agent-server');
  });

  it('says which interpreter is missing and where it came from', () => {
    const advice = describeLaunchFailure({
      interpreter: '/nope/python',
      source: 'setting',
      error: { code: 'ENOENT', message: 'spawn /nope/python ENOENT' },
    });
    expect(advice.message).toBe(
      'Python interpreter not found: /nope/python (from the setting agentServer.python). ' +
        'Set agentServer.python to a Python 3.11+ interpreter that has agent-server installed.',
    );
  });

  it('names a missing dependency', () => {
    const advice = describeLaunchFailure({ interpreter: 'python3', source: 'default', stderr: "ModuleNotFoundError: No module named 'pygls'" });
    expect(advice.message).toContain('"pygls"');
    expect(advice.message).toContain('python3 -m pip install agent-server');
  });

  it('asks for a newer Python', () => {
    const advice = describeLaunchFailure({
      interpreter: 'python3',
      source: 'python-extension',
      stderr: 'agent-server requires Python 3.11 or newer, not 3.9.18',
    });
    expect(advice.message).toContain('needs Python 3.11 or newer');
  });

  it('otherwise quotes the last line of the log, not the traceback', () => {
    const advice = describeLaunchFailure({
      interpreter: 'python3',
      source: 'default',
      stderr: 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n    boom()\n    ^^^^^^\nRuntimeError: port in use\n',
      exitCode: 1,
    });
    expect(advice.message).toBe('The agent server stopped (exit code 1): RuntimeError: port in use See the "Agent Server" output for its log.');
  });

  it('reads log levels from the server log format', () => {
    expect(logLevelOf('2026-01-01 10:00:00,000 WARNING agent_server.lsp: slow')).toBe('warn');
    expect(logLevelOf('2026-01-01 10:00:00,000 ERROR agent_server.lsp: bad')).toBe('error');
    expect(logLevelOf('2026-01-01 10:00:00,000 INFO agent_server: up')).toBe('info');
    expect(logLevelOf('  File "x.py", line 1')).toBe('info');
    expect(lastMeaningfulLine('\n\n')).toBeUndefined();
  });

  it('keeps a bounded tail of stderr', () => {
    const tail = new StderrTail(3);
    for (const line of ['1', '2', '3', '4']) tail.push(line);
    expect(tail.toString()).toBe('2\n3\n4');
  });
});
