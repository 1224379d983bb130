import { describe, expect, it } from 'vitest';
import type { AgentUpdateParams } from '../../src/protocol/types';
import { editOf, introducedProblems, type SeenProblem } from '../../src/state/problems';

const unused: SeenProblem = { line: 3, severity: 'warning', message: '"os" is not accessed', source: 'Pylance' };
const undefinedName: SeenProblem = { line: 9, severity: 'error', message: '"totl" is not defined', source: 'Pylance', code: 'reportUndefinedVariable' };

describe('the problems an edit introduced', () => {
  it('are those after the edit that were not there before, wherever lines moved', () => {
    const moved = { ...unused, line: 5 };
    expect(introducedProblems([unused], [moved, undefinedName])).toEqual([
      { line: 9, severity: 'error', message: '"totl" is not defined', source: 'Pylance' },
    ]);
  });

  it('count each kind: a second copy of a problem is new', () => {
    expect(introducedProblems([unused], [unused, { ...unused, line: 7 }])).toEqual([
      { line: 7, severity: 'warning', message: '"os" is not accessed', source: 'Pylance' },
    ]);
    expect(introducedProblems([unused, undefinedName], [unused])).toEqual([]);
  });
});

describe('the agent edits an update says', () => {
  const update = (u: unknown): AgentUpdateParams => ({ sessionId: 's', turnId: 't', seq: 0, update: u } as AgentUpdateParams);

  it('are a write or edit starting, and one that changed a file', () => {
    expect(editOf(update({ kind: 'toolCall', toolCallId: 'c1', title: 'Edit a.py', toolKind: 'edit', status: 'pending', rawInput: {}, locations: [{ path: 'a.py' }] }))).toEqual({ phase: 'start', callId: 'c1', paths: ['a.py'] });
    expect(editOf(update({ kind: 'toolCallUpdate', toolCallId: 'c1', status: 'completed', content: [{ type: 'diff', path: 'a.py', oldText: 'x', newText: 'y' }] }))).toEqual({ phase: 'changed', callId: 'c1', path: 'a.py' });
  });

  it('are not a read, a failed edit or a command', () => {
    expect(editOf(update({ kind: 'toolCall', toolCallId: 'c2', title: 'Read', toolKind: 'read', status: 'pending', rawInput: {}, locations: [{ path: 'a.py' }] }))).toBeUndefined();
    expect(editOf(update({ kind: 'toolCallUpdate', toolCallId: 'c1', status: 'failed', content: [{ type: 'diff', path: 'a.py', oldText: 'x', newText: 'y' }] }))).toBeUndefined();
    expect(editOf(update({ kind: 'toolCallUpdate', toolCallId: 'c3', status: 'completed', content: [{ type: 'content', content: { type: 'text', text: 'ok' } }] }))).toBeUndefined();
  });
});
