import { describe, expect, it } from 'vitest';
import recording from '../fixtures/session-stream.json';
import type { AgentUpdateParams, CompactionParams, SessionHistoryResult, SessionLoadResult, SessionUpdate, UsageSnapshot } from '../../src/protocol/types';
import {
  initialState,
  itemsFromTranscript,
  reduce,
  reduceAll,
  rewindTarget,
  streamingItemId,
  type Action,
  type AssistantItem,
  type CompactionItem,
  type Item,
  type NoticeItem,
  type OverflowItem,
  type PermissionItem,
  type ToolCallItem,
  type UserItem,
  type ViewState,
} from '../../src/state/reducer';
import { actionsFromRecording, type Recording } from '../support/replay';

const SESSION = 's-1';

function withSession(): ViewState {
  return reduce(initialState(), { type: 'sessionStarted', sessionId: SESSION, usage: usage(0) });
}

function usage(used: number, extra: Partial<UsageSnapshot> = {}): UsageSnapshot {
  return {
    sessionId: SESSION,
    used,
    size: 32768,
    compactAt: 24576,
    windowNumber: 1,
    lastTurn: { input: 0, cacheRead: 0, cacheWrite: 0, output: 0, cost: 0 }, lastCall: { input: 0, cacheRead: 0, cacheWrite: 0, output: 0, cost: 0 }, session: { input: 0, cacheRead: 0, cacheWrite: 0, output: 0, cost: 0 },
    cacheHitRate: 0,
    cost: 0,
    ...extra,
  };
}

let seq = 0;
function update(u: SessionUpdate, turnId = 't-1', sessionId = SESSION): Action {
  const params: AgentUpdateParams = { sessionId, turnId, seq: seq++, update: u };
  return { type: 'update', params };
}

function compaction(p: Partial<CompactionParams> & Pick<CompactionParams, 'status'>): Action {
  return {
    type: 'compaction',
    params: { sessionId: SESSION, compactionId: 'c-1', reason: 'threshold', tokensBefore: 25000, ...p },
  };
}

function kinds(items: Item[]): string[] {
  return items.map((i) => i.kind);
}

describe('streaming updates', () => {
  it('takes an update from outside a turn (a pin, a file changed between turns) without starting a turn', () => {
    // The server numbers each turn-less update from 0, under turnId "".
    const outside = (u: SessionUpdate): Action => ({ type: 'update', params: { sessionId: SESSION, turnId: '', seq: 0, update: u } });
    const pin = { id: 'p1', kind: 'rule', text: 'never edit CHANGELOG', by: 'user' } as const;
    const s = reduceAll(withSession(), [
      outside({ kind: 'pins', pins: [pin] }),
      outside({ kind: 'notice', level: 'info', message: 'README.md changed on disk' }),
      outside({ kind: 'notice', level: 'info', message: 'setup.py changed on disk' }),
    ]);
    expect(s.turn.status).toBe('idle');
    expect(streamingItemId(s)).toBeUndefined();
    expect(s.pins).toEqual([pin]);
    const notices = s.items.filter((i): i is NoticeItem => i.kind === 'notice');
    expect(notices.map((n) => n.message)).toEqual(['README.md changed on disk', 'setup.py changed on disk']);
    expect(new Set(s.items.map((i) => i.id)).size).toBe(s.items.length);
  });

  it('appends message chunks to one assistant item per messageId, in order', () => {
    seq = 0;
    const state = reduceAll(withSession(), [
      { type: 'promptSent', text: 'hi' },
      update({ kind: 'userMessage', entryId: 'e1', parentId: null, content: [{ type: 'text', text: 'hi' }] }),
      update({ kind: 'thoughtChunk', messageId: 'm1', content: { type: 'text', text: 'think ' } }),
      update({ kind: 'messageChunk', messageId: 'm1', content: { type: 'text', text: 'Hel' } }),
      update({ kind: 'messageChunk', messageId: 'm1', content: { type: 'text', text: 'lo' } }),
      update({ kind: 'thoughtChunk', messageId: 'm1', content: { type: 'text', text: 'more' } }),
      update({ kind: 'messageChunk', messageId: 'm2', content: { type: 'text', text: 'Second call' } }),
    ]);
    expect(kinds(state.items)).toEqual(['user', 'assistant', 'assistant']);
    const [, first, second] = state.items as [Item, AssistantItem, AssistantItem];
    expect(first.text).toBe('Hello');
    expect(first.thinking).toBe('think more');
    expect(second.text).toBe('Second call');
    expect(state.turn.status).toBe('running');
  });

  it('replaces the optimistic prompt with the recorded user message (rewind: ask again)', () => {
    seq = 0;
    let state = reduce(withSession(), { type: 'promptSent', text: 'fix it' });
    expect(state.items[0]).toMatchObject({ kind: 'user', pending: true });
    expect(rewindTarget(state.items[0] as Item)).toBeUndefined();
    state = reduce(state, update({ kind: 'userMessage', entryId: 'e9', parentId: 'e8', content: [{ type: 'text', text: 'fix it' }] }));
    expect(state.items).toHaveLength(1);
    expect(state.items[0]).toMatchObject({ kind: 'user', pending: false, entryId: 'e9', text: 'fix it' });
    // A prompt is its own rewind target: the server goes to just before it and gives it back,
    // to be asked again differently.
    expect(rewindTarget(state.items[0] as Item)).toBe('e9');
  });

  it('drops a repeated seq and ignores updates of other sessions', () => {
    const chunk = (s: number, text: string, sessionId = SESSION): Action => ({
      type: 'update',
      params: { sessionId, turnId: 't-9', seq: s, update: { kind: 'messageChunk', messageId: 'm', content: { type: 'text', text } } },
    });
    const state = reduceAll(withSession(), [chunk(0, 'a'), chunk(1, 'b'), chunk(1, 'b'), chunk(2, 'X', 'other'), chunk(2, 'c')]);
    expect((state.items[0] as AssistantItem).text).toBe('abc');
    expect(state.turn.lastSeq).toBe(2);
  });

  it('keeps unchanged items identical so the view can skip them', () => {
    seq = 0;
    const before = reduceAll(withSession(), [
      update({ kind: 'messageChunk', messageId: 'm1', content: { type: 'text', text: 'one' } }),
      update({ kind: 'messageChunk', messageId: 'm2', content: { type: 'text', text: 'two' } }),
    ]);
    const after = reduce(before, update({ kind: 'messageChunk', messageId: 'm2', content: { type: 'text', text: '!' } }));
    expect(after.items[0]).toBe(before.items[0]);
    expect(after.items[1]).not.toBe(before.items[1]);
  });
});

describe('tool calls', () => {
  it('follows a tool call from pending through in_progress to completed with its content', () => {
    seq = 0;
    let state = reduce(
      withSession(),
      update({
        kind: 'toolCall',
        toolCallId: 'tc1',
        title: 'read a.py',
        toolKind: 'read',
        status: 'pending',
        rawInput: { path: 'a.py' },
        locations: [{ path: 'a.py' }],
      }),
    );
    expect(state.items[0]).toMatchObject({ kind: 'toolCall', status: 'pending', title: 'read a.py', locations: [{ path: 'a.py' }] });
    state = reduce(state, update({ kind: 'toolCallUpdate', toolCallId: 'tc1', status: 'in_progress' }));
    expect((state.items[0] as ToolCallItem).status).toBe('in_progress');
    state = reduce(
      state,
      update({
        kind: 'toolCallUpdate',
        toolCallId: 'tc1',
        status: 'completed',
        content: [{ type: 'content', content: { type: 'text', text: 'print(1)' } }],
        rawOutput: { bytes: 8 },
      }),
    );
    const tool = state.items[0] as ToolCallItem;
    expect(tool.status).toBe('completed');
    expect(tool.content).toEqual([{ type: 'content', content: { type: 'text', text: 'print(1)' } }]);
    expect(tool.rawOutput).toEqual({ bytes: 8 });
    expect(tool.rawInput).toEqual({ path: 'a.py' });
    expect(state.items).toHaveLength(1);
  });

  it('marks a failed tool call failed and keeps earlier content when an update has none', () => {
    seq = 0;
    const state = reduceAll(withSession(), [
      update({ kind: 'toolCall', toolCallId: 'tc2', title: 'bash false', toolKind: 'execute', status: 'pending', rawInput: { command: 'false' } }),
      update({ kind: 'toolCallUpdate', toolCallId: 'tc2', content: [{ type: 'content', content: { type: 'text', text: 'partial' } }] }),
      update({ kind: 'toolCallUpdate', toolCallId: 'tc2', status: 'failed' }),
    ]);
    const tool = state.items[0] as ToolCallItem;
    expect(tool.status).toBe('failed');
    expect(tool.content).toHaveLength(1);
  });
});

describe('compaction, overflow, usage', () => {
  it('turns compaction started → completed into one marker with tokens and summary', () => {
    let state = reduce(withSession(), compaction({ status: 'started' }));
    expect(state.compacting).toBe(true);
    expect(state.items[0]).toMatchObject({ kind: 'compaction', status: 'started', tokensBefore: 25000 });
    state = reduce(state, compaction({ status: 'completed', tokensAfter: 6000, summary: '## Goal', firstKeptEntryId: 'e5' }));
    expect(state.items).toHaveLength(1);
    expect(state.items[0]).toMatchObject({
      kind: 'compaction',
      status: 'completed',
      tokensBefore: 25000,
      tokensAfter: 6000,
      summary: '## Goal',
      firstKeptEntryId: 'e5',
      reason: 'threshold',
    });
    expect(state.compacting).toBe(false);
  });

  it('keeps exactly one terminal status per compactionId', () => {
    const state = reduceAll(withSession(), [
      compaction({ status: 'started' }),
      compaction({ status: 'failed', error: 'summary model unavailable' }),
      compaction({ status: 'completed', tokensAfter: 1 }),
    ]);
    expect(state.items).toHaveLength(1);
    expect(state.items[0]).toMatchObject({ status: 'failed', error: 'summary model unavailable' });
  });

  it('shows overflow notices with kind and action', () => {
    const state = reduce(withSession(), {
      type: 'overflow',
      params: { sessionId: SESSION, turnId: 't-1', kind: 'rejected', action: 'compacting', message: 'prompt is too long' },
    });
    expect(state.items[0]).toMatchObject({ kind: 'overflow', overflow: 'rejected', action: 'compacting', message: 'prompt is too long' });
  });

  it('takes usage for the open session only', () => {
    let state = reduce(withSession(), { type: 'usage', params: usage(12000, { cacheHitRate: 0.9, cost: 0.02 }) });
    expect(state.usage).toMatchObject({ used: 12000, cacheHitRate: 0.9, cost: 0.02 });
    state = reduce(state, { type: 'usage', params: { ...usage(99), sessionId: 'other' } });
    expect(state.usage?.used).toBe(12000);
  });
});

describe('permission cards', () => {
  const params = {
    sessionId: SESSION,
    toolCall: { toolCallId: 'tc3', title: 'bash rm -rf build', toolKind: 'execute' as const, rawInput: { command: 'rm -rf build' } },
    options: [
      { optionId: 'a', name: 'Allow once', kind: 'allow_once' as const },
      { optionId: 'r', name: 'Reject', kind: 'reject_once' as const },
    ],
  };

  it('shows a pending card with the tool, its arguments and the options, then the answer', () => {
    let state = reduce(withSession(), { type: 'permissionRequested', requestId: 'p1', params });
    const card = state.items[0] as PermissionItem;
    expect(card).toMatchObject({ kind: 'permission', status: 'pending', requestId: 'p1' });
    expect(card.toolCall.rawInput).toEqual({ command: 'rm -rf build' });
    expect(card.options.map((o) => o.kind)).toEqual(['allow_once', 'reject_once']);
    state = reduce(state, { type: 'permissionResolved', requestId: 'p1', outcome: { selected: 'r' } });
    expect(state.items[0]).toMatchObject({ status: 'answered', selected: 'r' });
  });

  it('marks a card cancelled when the request is cancelled or the turn ends', () => {
    const cancelled = reduceAll(withSession(), [
      { type: 'permissionRequested', requestId: 'p1', params },
      { type: 'permissionResolved', requestId: 'p1', outcome: 'cancelled' },
    ]);
    expect(cancelled.items[0]).toMatchObject({ status: 'cancelled' });
    const ended = reduceAll(withSession(), [
      { type: 'promptSent', text: 'x' },
      { type: 'permissionRequested', requestId: 'p2', params },
      { type: 'turnEnded', result: { stopReason: 'cancelled' } },
    ]);
    expect(ended.items.find((i) => i.kind === 'permission')).toMatchObject({ status: 'cancelled' });
    expect(ended.turn.status).toBe('idle');
    expect(ended.items.at(-1)).toMatchObject({ kind: 'notice', message: 'Stopped.' });
  });
});

describe('turn lifecycle', () => {
  it('goes running → stopping → idle and reports errors', () => {
    let state = reduce(withSession(), { type: 'promptSent', text: 'go' });
    expect(state.turn.status).toBe('running');
    state = reduce(state, { type: 'stopRequested' });
    expect(state.turn.status).toBe('stopping');
    state = reduce(state, {
      type: 'turnEnded',
      result: { turnId: 't', stopReason: 'error', error: { code: 'missing_api_key', message: 'Set ANTHROPIC_API_KEY' }, usage: usage(10) },
    });
    expect(state.turn.status).toBe('idle');
    expect(state.items.at(-1)).toMatchObject({ kind: 'notice', level: 'error', message: 'Set ANTHROPIC_API_KEY' });
    expect(state.usage?.used).toBe(10);
  });

  it('ends the turn and compaction when the server stops', () => {
    const state = reduceAll(withSession(), [
      { type: 'promptSent', text: 'go' },
      compaction({ status: 'started' }),
      { type: 'serverStatus', status: 'failed', message: 'gone' },
    ]);
    expect(state.turn.status).toBe('idle');
    expect(state.compacting).toBe(false);
    expect(state.server).toEqual({ status: 'failed', message: 'gone' });
  });
});

describe('session load', () => {
  const rec = recording as unknown as Recording;
  const load = rec.messages[0];

  it('builds the transcript with the compaction marker where it happened', () => {
    if (load?.direction !== 'response') throw new Error('fixture starts with the load');
    const state = reduce(withSession(), { type: 'sessionLoaded', result: load.result as never });
    expect(state.sessionId).toBe('s-7f3a9c');
    expect(state.title).toBe('Parser tests');
    expect(kinds(state.items)).toEqual(['user', 'assistant', 'toolCall', 'assistant', 'compaction', 'user', 'assistant', 'modelChange']);
    const marker = state.items[4] as CompactionItem;
    expect(marker).toMatchObject({ status: 'completed', tokensBefore: 27000, tokensAfter: 6100, reason: 'threshold', firstKeptEntryId: 'e0000006' });
    expect(marker.summary).toContain('## Goal');
    const tool = state.items[2] as ToolCallItem;
    // The tool's own title, as the live stream gives it.
    expect(tool).toMatchObject({ status: 'completed', title: 'Read parser.py', toolKind: 'read', rawInput: { path: 'parser.py' } });
    expect((tool.content[0] as { content: { text: string } }).content.text).toContain('def parse');
    expect((state.items[1] as AssistantItem).thinking).toBe('Read the file before answering.');
    // Everything recorded rewinds to itself: an answer to continue after it, a prompt to go
    // back to just before it (the server gives the prompt back), the first prompt too.
    expect(state.items.map(rewindTarget).filter(Boolean)).toEqual(['e0000001', 'e0000002', 'e0000004', 'e0000006', 'e0000007']);
    expect(state.items[7]).toMatchObject({ kind: 'modelChange', model: expect.any(String) });
    expect(state.usage?.windowNumber).toBe(2);
    expect(state.older).toEqual({ cursor: undefined, loading: false });
  });

  it('says what a repair on open did, after the history it kept', () => {
    const result = {
      sessionId: 's1',
      transcript: [{ kind: 'userMessage', entryId: 'a', parentId: null, content: [{ type: 'text', text: 'one' }] }],
      cursor: null,
      usage: usage(10),
      repair: {
        message: 'The session was repaired when it was opened: line 3 skipped (not valid JSON). 1 entry kept.',
        keptEntries: 1,
        issues: [{ line: 3, offset: 120, reason: 'not valid JSON', action: 'skipped' }],
        truncatedBytes: 0,
        abortedToolCalls: [],
      },
    };
    const state = reduce(withSession(), { type: 'sessionLoaded', result: result as never });
    expect(kinds(state.items)).toEqual(['user', 'notice']);
    expect(state.items[1]).toMatchObject({ level: 'warning', message: result.repair.message });
    const clean = reduce(withSession(), { type: 'sessionLoaded', result: { ...result, repair: undefined } as never });
    expect(kinds(clean.items)).toEqual(['user']);
  });

  it('shows a rewind branch marker', () => {
    const items = itemsFromTranscript([
      { kind: 'userMessage', entryId: 'a', parentId: null, content: [{ type: 'text', text: 'one' }] },
      { kind: 'branch', entryId: 'b', targetId: 'a' },
    ]);
    expect(kinds(items)).toEqual(['user', 'branch']);
    expect(items[0]).toMatchObject({ text: 'one' });
  });

  it('gives a loaded page the items the live stream would have made', () => {
    if (load?.direction !== 'response') throw new Error('fixture starts with the load');
    const loaded = load.result as SessionLoadResult;
    const updates = loaded.transcript.filter((t): t is SessionUpdate => !['compaction', 'branch', 'modelChange'].includes(t.kind));
    let live = withSession();
    updates.forEach((update, seq) => {
      live = reduce(live, { type: 'update', params: { sessionId: SESSION, turnId: 't', seq, update } });
    });
    const fromLoad = itemsFromTranscript(updates);
    expect(live.items).toEqual(fromLoad);
  });

  it('prepends older pages, once, and keeps their cursor', () => {
    const page = (cursor: string | null, ids: string[]): SessionHistoryResult => ({
      sessionId: SESSION,
      cursor,
      transcript: ids.map((id) => ({ kind: 'userMessage', entryId: id, parentId: null, content: [{ type: 'text', text: id }] })),
    });
    let state = reduce(withSession(), { type: 'sessionLoaded', result: { ...page('c2', ['e3', 'e4']), usage: withSession().usage! } as SessionLoadResult });
    expect(state.older).toEqual({ cursor: 'c2', loading: false });
    // not asked for: ignored
    expect(reduce(state, { type: 'olderLoaded', result: page('c1', ['e1', 'e2']) })).toBe(state);
    state = reduce(state, { type: 'olderRequested', sessionId: SESSION });
    expect(state.older.loading).toBe(true);
    expect(reduce(state, { type: 'olderRequested', sessionId: SESSION })).toBe(state);
    state = reduce(state, { type: 'olderLoaded', result: page('c1', ['e2', 'e3']) });
    expect(state.items.map((i) => (i as UserItem).text)).toEqual(['e2', 'e3', 'e4']);
    expect(state.older).toEqual({ cursor: 'c1', loading: false });
    state = reduce(reduce(state, { type: 'olderRequested', sessionId: SESSION }), { type: 'olderLoaded', result: page(null, ['e1']) });
    expect(state.items).toHaveLength(4);
    expect(state.older).toEqual({ cursor: undefined, loading: false });
    expect(reduce(state, { type: 'olderRequested', sessionId: SESSION })).toBe(state);
  });

  it('a failed page says so and can be asked again', () => {
    let state = reduce(withSession(), { type: 'sessionLoaded', result: { sessionId: SESSION, transcript: [], cursor: 'c', usage: withSession().usage! } as Partial<SessionLoadResult> as SessionLoadResult });
    state = reduce(state, { type: 'olderRequested', sessionId: SESSION });
    state = reduce(state, { type: 'olderFailed', sessionId: SESSION, message: 'Could not load earlier messages: boom' });
    expect(state.older).toEqual({ cursor: 'c', loading: false });
    expect(state.items.at(-1)).toMatchObject({ kind: 'notice', level: 'error' });
  });

  it('shows an editor note as a note, not as something the user wrote', () => {
    const items = itemsFromTranscript([
      { kind: 'notice', level: 'info', message: 'README.md changed on disk since you last read or wrote it.', entryId: 'n', note: 'externalEdit' },
      { kind: 'userMessage', entryId: 'p', parentId: 'n', content: [{ type: 'text', text: 'go on' }] },
    ]);
    expect(kinds(items)).toEqual(['notice', 'user']);
    expect(items[0]).toMatchObject({ id: 'entry:n', level: 'info', message: 'README.md changed on disk since you last read or wrote it.' });
    expect(items[1]).toMatchObject({ text: 'go on', parentId: 'n' });
  });
});

describe('the recorded stream', () => {
  it('replays into the transcript the view shows', () => {
    const rec = recording as unknown as Recording;
    const state = reduceAll(initialState(), actionsFromRecording(rec.messages));
    const live = state.items.slice(8);
    expect(kinds(live)).toEqual([
      'user',
      'assistant',
      'toolCall',
      'assistant',
      'toolCall',
      'permission',
      'toolCall',
      'overflow',
      'compaction',
      'assistant',
      'notice',
      'user',
      'assistant',
      'toolCall',
      'permission',
    ]);
    expect(live.filter((i) => i.kind === 'toolCall').map((i) => (i as ToolCallItem).status)).toEqual([
      'completed',
      'completed',
      'failed',
      'pending',
    ]);
    expect(live.filter((i) => i.kind === 'permission').map((i) => (i as PermissionItem).status)).toEqual(['answered', 'pending']);
    expect(live[8]).toMatchObject({ kind: 'compaction', status: 'completed', reason: 'overflow', tokensBefore: 31200, tokensAfter: 7400 });
    // One overflow, one item: compacting, then retrying (not two notices that disagree).
    expect(live[7]).toMatchObject({ kind: 'overflow', action: 'retrying', turnId: 't-0002' });
    expect((live[7] as OverflowItem).steps.map((step) => step.action)).toEqual(['compacting', 'retrying']);
    expect(state.usage).toMatchObject({ used: 24100, windowNumber: 3 });
    expect(state.turn).toMatchObject({ status: 'running', turnId: 't-0003', lastSeq: 2 });
  });
});

describe('MCP status', () => {
  const status = (sessionId: string, toolCount: number) => ({
    sessionId,
    toolCount,
    servers: [{ name: 'fs', state: 'ready' as const, transport: 'stdio' as const, target: 'fs', tools: ['read'], trusted: false, source: '.mcp.json' }],
    toolsChange: null,
  });

  it("keeps the current session's status and ignores another session's", () => {
    const state = reduceAll(withSession(), [
      { type: 'mcpStatus', params: status(SESSION, 8) },
      { type: 'mcpStatus', params: status('other', 99) },
    ]);
    expect(state.mcp?.toolCount).toBe(8);
  });

  it('comes with a new or loaded session, and a new session replaces the old status', () => {
    const started = reduce(withSession(), { type: 'mcpStatus', params: status(SESSION, 8) });
    const next = reduce(started, { type: 'sessionStarted', sessionId: 's-2' });
    expect(next.mcp).toBeUndefined();
    const loaded = reduce(next, {
      type: 'sessionLoaded',
      result: { sessionId: 's-3', transcript: [], usage: usage(0), mcp: status('s-3', 3) } as Partial<SessionLoadResult> as SessionLoadResult,
    });
    expect(loaded.mcp?.toolCount).toBe(3);
  });
});

describe('compaction requested by the user', () => {
  it('keeps the outcome for the Compact panel, and says so when there was nothing to do', () => {
    let state = reduce(withSession(), { type: 'compactRequested' });
    expect(state.compacting).toBe(true);
    state = reduce(state, { type: 'compactFinished', result: { outcome: 'noop', tokensBefore: 900, tokensAfter: 900, windowNumber: 1 } });
    expect(state.compacting).toBe(false);
    expect(state.compactResult?.outcome).toBe('noop');
    expect(state.compactResult?.message).toMatch(/Nothing to compact yet.*instructions are kept/);
    state = reduce(state, { type: 'compactRequested' });
    expect(state.compactResult).toBeUndefined();
    state = reduce(state, { type: 'compactFinished', result: { outcome: 'compacted', tokensBefore: 25000, tokensAfter: 6000, windowNumber: 2 } });
    expect(state.compactResult).toEqual({ outcome: 'compacted', message: 'Compacted: 25,000 → 6,000 tokens.' });
  });
});

describe('a prompt that never reached a session', () => {
  it('stays in the transcript, marked, and a configuration problem goes to the banner', () => {
    let state = reduce(initialState(), { type: 'promptSent', text: 'hello' });
    state = reduce(state, { type: 'turnFailed', message: 'Set ANTHROPIC_API_KEY', configuration: true });
    expect(state.items).toEqual([expect.objectContaining({ kind: 'user', text: 'hello', failed: 'Set ANTHROPIC_API_KEY', pending: false })]);
    expect(state.problem).toBe('Set ANTHROPIC_API_KEY');
    expect(state.turn.status).toBe('idle');
    expect(reduce(state, { type: 'problemDismissed' }).problem).toBeUndefined();
    const other = reduce(reduce(initialState(), { type: 'promptSent', text: 'x' }), { type: 'turnFailed', message: 'boom' });
    expect(other.problem).toBeUndefined();
    expect(kinds(other.items)).toEqual(['user', 'notice']);
  });
});

describe('the end of a turn', () => {
  it('closes a tool call still running when the turn is stopped: stopped, not running forever', () => {
    seq = 0;
    const state = reduceAll(withSession(), [
      { type: 'promptSent', text: 'run the tests' },
      update({ kind: 'toolCall', toolCallId: 'c1', title: 'Run: sleep 60', toolKind: 'execute', status: 'pending', rawInput: { command: 'sleep 60' } }),
      update({ kind: 'toolCallUpdate', toolCallId: 'c1', status: 'in_progress' }),
      { type: 'stopRequested' },
      { type: 'turnEnded', result: { stopReason: 'cancelled' } },
    ]);
    const tool = state.items.find((i) => i.kind === 'toolCall') as ToolCallItem;
    expect(tool).toMatchObject({ status: 'failed', stopped: true });
    expect(state.turn.status).toBe('idle');
  });

  it('reads a stopped call the same way after a reload (the aborted result)', () => {
    const items = itemsFromTranscript([
      { kind: 'toolCall', toolCallId: 'c1', title: 'Run: sleep 60', toolKind: 'execute', status: 'pending', rawInput: {} },
      {
        kind: 'toolCallUpdate',
        toolCallId: 'c1',
        status: 'failed',
        content: [{ type: 'content', content: { type: 'text', text: 'The tool call was aborted by the user.' } }],
        rawOutput: { aborted: true },
      },
    ]);
    expect(items[0]).toMatchObject({ kind: 'toolCall', status: 'failed', stopped: true });
  });

  it('streams into the running turn only: no cursor on the last turn\'s answer', () => {
    seq = 0;
    let state = reduceAll(withSession(), [
      { type: 'promptSent', text: 'one' },
      update({ kind: 'messageChunk', messageId: 'm1', content: { type: 'text', text: 'First answer' } }, 't-1'),
    ]);
    expect(streamingItemId(state)).toBe('msg:m1');
    state = reduceAll(state, [{ type: 'turnEnded', result: { stopReason: 'end_turn' } }, { type: 'promptSent', text: 'two' }]);
    expect(state.turn.status).toBe('running');
    expect(streamingItemId(state)).toBeUndefined();
    state = reduce(state, update({ kind: 'messageChunk', messageId: 'm2', content: { type: 'text', text: 'Sec' } }, 't-2'));
    expect(streamingItemId(state)).toBe('msg:m2');
  });
});

describe('overflow and retries', () => {
  const overflow = (action: 'compacting' | 'retrying' | 'gaveUp', turnId = 't-1'): Action => ({
    type: 'overflow',
    params: { sessionId: SESSION, turnId, kind: 'rejected', action, message: `${action} message` },
  });

  it('shows one overflow as one item that goes from compacting to retried', () => {
    let state = reduceAll(withSession(), [{ type: 'promptSent', text: 'go' }, overflow('compacting'), overflow('retrying')]);
    const items = state.items.filter((i) => i.kind === 'overflow') as OverflowItem[];
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ action: 'retrying', message: 'retrying message', resolved: false });
    state = reduce(state, { type: 'turnEnded', result: { stopReason: 'end_turn' } });
    expect(state.items.find((i) => i.kind === 'overflow')).toMatchObject({ resolved: true });
  });

  it('keeps a give-up as it is', () => {
    const state = reduceAll(withSession(), [
      { type: 'promptSent', text: 'go' },
      overflow('compacting'),
      overflow('gaveUp'),
      { type: 'turnEnded', result: { stopReason: 'error', error: { code: 'context_overflow', message: 'too large' } } },
    ]);
    expect(state.items.find((i) => i.kind === 'overflow')).toMatchObject({ action: 'gaveUp', resolved: false });
  });

  it('keeps one line per retried call, the latest attempt, resolved once the model answers', () => {
    seq = 0;
    const retry = (attempt: number): Action =>
      update({ kind: 'notice', level: 'warning', message: `Overloaded. Retrying (attempt ${attempt} of 4).`, retry: { attempt, attempts: 4, wait: 1 } });
    let state = reduceAll(withSession(), [{ type: 'promptSent', text: 'go' }, retry(2), retry(3)]);
    let notices = state.items.filter((i) => i.kind === 'notice') as NoticeItem[];
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatchObject({ retry: { attempt: 3 }, resolved: false });
    state = reduce(state, update({ kind: 'messageChunk', messageId: 'm1', content: { type: 'text', text: 'ok' } }));
    notices = state.items.filter((i) => i.kind === 'notice') as NoticeItem[];
    expect(notices[0]).toMatchObject({ resolved: true });
    // A later retry in the same turn is a new line (the earlier call went through).
    state = reduce(state, retry(2));
    expect(state.items.filter((i) => i.kind === 'notice')).toHaveLength(2);
  });

  it('marks an answer cut off mid-stream as discarded, with no rewind, and streams the retry as its own', () => {
    seq = 0;
    const chunk = (messageId: string, text: string): Action => update({ kind: 'messageChunk', messageId, content: { type: 'text', text } });
    let state = reduceAll(withSession(), [
      { type: 'promptSent', text: 'go' },
      update({ kind: 'thoughtChunk', messageId: 'm1', content: { type: 'text', text: 'Let me' } }),
      chunk('m1', 'The layout is'),
      update({ kind: 'messageDiscarded', messageId: 'm1' }),
      update({ kind: 'notice', level: 'warning', message: 'Dropped. Retrying in 1s (attempt 2 of 5).', retry: { attempt: 2, attempts: 5, wait: 1 } }),
    ]);
    const cut = state.items.find((i) => i.id === 'msg:m1') as AssistantItem;
    expect(cut).toMatchObject({ discarded: true, text: 'The layout is', thinking: 'Let me' });
    expect(rewindTarget(cut)).toBeUndefined(); // never recorded
    expect(streamingItemId(state)).toBeUndefined(); // no cursor on the abandoned answer
    state = reduce(state, chunk('m2', 'The layout is simple.'));
    const answers = state.items.filter((i) => i.kind === 'assistant') as AssistantItem[];
    expect(answers.map((a) => [a.text, a.discarded ?? false])).toEqual([
      ['The layout is', true],
      ['The layout is simple.', false],
    ]);
    expect(streamingItemId(state)).toBe('msg:m2');
    // Discarding an id the view never showed changes nothing.
    expect(reduce(state, update({ kind: 'messageDiscarded', messageId: 'gone' })).items).toEqual(state.items);
  });
});

describe('model and thinking', () => {
  it('follows a model change a setting made, with its note, once', () => {
    seq = 0;
    let state = reduce(withSession(), { type: 'modelsListed', models: [], current: 'sim-small' });
    const change = update({
      kind: 'modelChange',
      entryId: 'mc1',
      provider: 'anthropic-messages',
      model: 'sim-large',
      thinking: 'low',
      modelInfo: { id: 'sim-large', name: 'Simulator, 200k window', contextWindow: 200000 },
      note: 'A settings change: Switched to Simulator, 200k window.',
    });
    state = reduceAll(state, [change, change]);
    const markers = state.items.filter((i) => i.kind === 'modelChange');
    expect(markers).toEqual([
      expect.objectContaining({ id: 'entry:mc1', model: 'sim-large', thinking: 'low', note: expect.stringContaining('settings change') }),
    ]);
    expect(state.model).toEqual({ id: 'sim-large', name: 'Simulator, 200k window', contextWindow: 200000 });
    expect(state.thinking).toBe('low');
  });

  it('marks a thinking switch with what it costs; the settings show before a session only', () => {
    let state = reduce(initialState(), { type: 'settingsRead', mode: 'ask', thinking: 'medium' });
    expect(state).toMatchObject({ mode: 'ask', thinking: 'medium' });
    state = reduce(state, { type: 'sessionStarted', sessionId: SESSION, model: { id: 'sim-small', name: 'Sim', contextWindow: 32768 }, mode: 'allowAll', thinking: 'off', canThink: true });
    state = reduce(state, { type: 'settingsRead', mode: 'ask', thinking: 'high' });
    expect(state).toMatchObject({ mode: 'allowAll', thinking: 'off' });
    const cost = { tokens: 100, switchedCost: 0.1, stayedCost: 0.01, compacts: false, compactAt: 1, window: 2, warm: 0 };
    state = reduce(state, { type: 'thinkingChanged', sessionId: SESSION, result: { thinking: 'high', canThink: true, entryId: 'e9', cost, note: 'Thinking: high effort (was off).' } });
    expect(state.thinking).toBe('high');
    expect(state.items.at(-1)).toMatchObject({ kind: 'modelChange', model: 'sim-small', thinking: 'high', note: 'Thinking: high effort (was off).' });
  });
});

describe('typing ahead', () => {
  it('queues prompts in order and removes one', () => {
    let state = reduceAll(withSession(), [
      { type: 'promptQueued', text: 'then this' },
      { type: 'promptQueued', text: 'and this' },
    ]);
    expect(state.queue.map((q) => q.text)).toEqual(['then this', 'and this']);
    state = reduce(state, { type: 'queueRemoved', id: state.queue[0]!.id });
    expect(state.queue.map((q) => q.text)).toEqual(['and this']);
  });
});

describe('removed pins', () => {
  const pin = (id: string, text: string, kind: 'rule' | 'fact' = 'rule') => ({ id, kind, text, by: 'user' as const });
  const pins = (...list: ReturnType<typeof pin>[]): Action => update({ kind: 'pins', pins: list });

  it('keeps a trace of each pin removed, newest first and at most five, until another session opens', () => {
    const all = Array.from({ length: 7 }, (_, n) => pin(`p${n}`, `rule ${n}`));
    let state = reduceAll(withSession(), [pins(...all)]);
    for (let n = 0; n < all.length; n++) state = reduceAll(state, [pins(...all.slice(n + 1))]);
    expect(state.pins).toEqual([]);
    expect(state.removedPins.map((p) => p.id)).toEqual(['p6', 'p5', 'p4', 'p3', 'p2']);
    expect(reduceAll(state, [{ type: 'sessionStarted', sessionId: 's-2' }]).removedPins).toEqual([]);
  });

  it('forgets a removed pin once the same text is pinned again, whoever pins it', () => {
    const state = reduceAll(withSession(), [pins(pin('a', 'never edit CHANGELOG'), pin('b', 'x', 'fact')), pins(pin('b', 'x', 'fact'))]);
    expect(state.removedPins.map((p) => p.text)).toEqual(['never edit CHANGELOG']);
    const again = reduceAll(state, [{ type: 'pinsChanged', sessionId: SESSION, pins: [pin('b', 'x', 'fact'), pin('c', 'never edit CHANGELOG')] }]);
    expect(again.removedPins).toEqual([]);
    const otherKind = reduceAll(state, [pins(pin('b', 'x', 'fact'), pin('d', 'never edit CHANGELOG', 'fact'))]);
    expect(otherKind.removedPins.map((p) => p.id)).toEqual(['a']); // a fact is not the rule
  });
});
