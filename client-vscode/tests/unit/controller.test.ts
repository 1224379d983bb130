import { afterEach, describe, expect, it } from 'vitest';
import type { MessageConnection } from 'vscode-jsonrpc/node';
import { ResponseError, type CancellationToken } from 'vscode-jsonrpc/node';
import { SessionController } from '../../src/controller';
import { AgentClient } from '../../src/protocol/client';
import type { RequestPermissionParams } from '../../src/protocol/types';
import type { Action, PermissionItem } from '../../src/state/reducer';
import { usageSnapshot as usage } from '../support/usage';
import { connectionPair, waitFor } from '../support/pipe';

let pair: ReturnType<typeof connectionPair> | undefined;
afterEach(() => {
  pair?.dispose();
  pair = undefined;
});


/** The sessions the controller creates and the turns it sends, each answered at once. */
function recordNewSessionsAndTurns(server: MessageConnection): { created: unknown[]; turns: { sessionId: string }[] } {
  const created: unknown[] = [];
  server.onRequest('agent/session/new', (p: unknown) => {
    created.push(p);
    return { sessionId: 'fresh', usage: usage('fresh') };
  });
  const turns: { sessionId: string }[] = [];
  server.onRequest('agent/turn', (p: { sessionId: string }) => {
    turns.push(p);
    return { turnId: 't', stopReason: 'end_turn', usage: usage(p.sessionId) };
  });
  return { created, turns };
}

/** The permission questions the host was told of (agentServer.review.openDiff opens them). */
let asked: [string, string][] = [];

function setup(memory: Map<string, unknown> = new Map()): { controller: SessionController; server: MessageConnection; published: Action[]; configErrors: string[]; traced: string[] } {
  pair = connectionPair();
  asked = [];
  const published: Action[] = [];
  const configErrors: string[] = [];
  const traced: string[] = [];
  const controller = new SessionController({
    publish: (actions) => published.push(...actions),
    onConfigurationError: (m) => configErrors.push(m),
    trace: (m) => traced.push(m),
    onPermissionAsked: (requestId, params) => asked.push([requestId, params.toolCall.toolCallId]),
    memory: { get: <T,>(key: string) => memory.get(key) as T | undefined, update: (key, value) => void memory.set(key, value) },
  });
  controller.attach(new AgentClient(pair.client));
  controller.dispatch({ type: 'serverStatus', status: 'running' });
  controller.setWorkspace('file:///w');
  return { controller, server: pair.server, published, configErrors, traced };
}

describe('SessionController', () => {
  it('pins "/remember" typed in the prompt box instead of sending it to the model, even during a turn', async () => {
    const { controller, server } = setup();
    const { created, turns } = recordNewSessionsAndTurns(server);
    server.onRequest('agent/session/list', () => ({ sessions: [] }));
    const added: unknown[] = [];
    server.onRequest('agent/pins/add', (p: { text: string; kind: 'rule' | 'fact' }) => {
      added.push(p);
      const pin = { id: `p${added.length}`, kind: p.kind, text: p.text, by: 'user' };
      return { pin, pins: [pin] };
    });
    // No session yet: one starts, with the pin and no turn.
    await controller.send('/remember fact: the journal is data/journal.jsonl');
    expect(created).toHaveLength(1);
    expect(added).toEqual([{ sessionId: 'fresh', text: 'the journal is data/journal.jsonl', kind: 'fact' }]);
    expect(turns).toEqual([]);
    expect(controller.state.pins.map((p) => p.text)).toEqual(['the journal is data/journal.jsonl']);
    expect(controller.state.items.at(-1)).toMatchObject({ kind: 'notice', message: 'Pinned fact: the journal is data/journal.jsonl (× in the pins above removes it).' });
    // During a turn it is not queued for later: it pins at once.
    controller.dispatch({ type: 'promptSent', text: 'go' });
    await controller.send('/remember   never edit CHANGELOG');
    expect(added.at(-1)).toEqual({ sessionId: 'fresh', text: 'never edit CHANGELOG', kind: 'rule' });
    expect(controller.state.queue).toEqual([]);
    // Nothing to pin: it says how, and sends nothing.
    controller.dispatch({ type: 'turnEnded', result: { stopReason: 'end_turn' } });
    await controller.send('/remember');
    expect(added).toHaveLength(2);
    expect(turns).toEqual([]);
    expect(controller.state.items.at(-1)).toMatchObject({ kind: 'notice', level: 'warning' });
  });

  it('creates a session on the first prompt and runs the turn with streamed updates', async () => {
    const { controller, server } = setup();
    server.onRequest('agent/session/new', () => ({ sessionId: 's1', usage: usage('s1') }));
    server.onRequest('agent/session/list', () => ({ sessions: [] }));
    server.onRequest('agent/turn', async (params: { sessionId: string; prompt: string }) => {
      await server.sendNotification('agent/update', {
        sessionId: params.sessionId,
        turnId: 't1',
        seq: 0,
        update: { kind: 'userMessage', entryId: 'e1', content: [{ type: 'text', text: params.prompt }] },
      });
      await server.sendNotification('agent/update', {
        sessionId: params.sessionId,
        turnId: 't1',
        seq: 1,
        update: { kind: 'messageChunk', messageId: 'm1', content: { type: 'text', text: 'Hello' } },
      });
      await server.sendNotification('agent/usage', usage('s1', 1200));
      return { turnId: 't1', stopReason: 'end_turn', usage: usage('s1', 1250) };
    });
    await controller.send('  hi there ');
    const s = controller.state;
    expect(s.sessionId).toBe('s1');
    expect(s.turn.status).toBe('idle');
    expect(s.items.map((i) => i.kind)).toEqual(['user', 'assistant']);
    expect(s.items[0]).toMatchObject({ entryId: 'e1', text: 'hi there', pending: false });
    expect(s.items[1]).toMatchObject({ text: 'Hello' });
    expect(s.usage?.used).toBe(1250);
  });

  it('shows a permission card and answers with the chosen option', async () => {
    const { controller, server } = setup();
    controller.dispatch({ type: 'sessionStarted', sessionId: 's1' });
    const params: RequestPermissionParams = {
      sessionId: 's1',
      toolCall: { toolCallId: 'tc', title: 'write a.txt', toolKind: 'edit', rawInput: { path: 'a.txt' } },
      options: [
        { optionId: 'ok', name: 'Allow once', kind: 'allow_once' },
        { optionId: 'no', name: 'Reject', kind: 'reject_once' },
      ],
    };
    const answer = server.sendRequest('agent/requestPermission', params);
    await waitFor(() => controller.state.items.some((i) => i.kind === 'permission'));
    const card = controller.state.items.find((i) => i.kind === 'permission') as PermissionItem;
    expect(card.status).toBe('pending');
    expect(asked).toEqual([[card.requestId, 'tc']]); // the host may open the change for review
    controller.answerPermission(card.requestId, 'no');
    expect(await answer).toEqual({ outcome: { selected: 'no' } });
    expect(controller.state.items.find((i) => i.kind === 'permission')).toMatchObject({ status: 'answered', selected: 'no' });
  });

  it('answers "cancelled" when the server cancels the permission request', async () => {
    const { controller, server } = setup();
    controller.dispatch({ type: 'sessionStarted', sessionId: 's1' });
    const { CancellationTokenSource } = await import('vscode-jsonrpc/node');
    const source = new CancellationTokenSource();
    const answer = server.sendRequest(
      'agent/requestPermission',
      { sessionId: 's1', toolCall: { toolCallId: 'tc', title: 't', toolKind: 'other', rawInput: {} }, options: [] },
      source.token,
    );
    await waitFor(() => controller.pendingPermissions === 1);
    source.cancel();
    expect(await answer).toEqual({ outcome: 'cancelled' });
    await waitFor(() => controller.pendingPermissions === 0);
    expect(controller.state.items.find((i) => i.kind === 'permission')).toMatchObject({ status: 'cancelled' });
  });

  it('tells the server when the user leaves and comes back, once per change', async () => {
    const { controller, server } = setup();
    const seen: boolean[] = [];
    server.onRequest('agent/userIdle', (params: { idle: boolean }) => {
      seen.push(params.idle);
      return {};
    });
    controller.setUserIdle(true);
    controller.setUserIdle(true);
    controller.setUserIdle(false);
    await waitFor(() => seen.length === 2);
    expect(seen).toEqual([true, false]);
  });

  it('stops a turn with agent/interrupt', async () => {
    const { controller, server } = setup();
    controller.dispatch({ type: 'sessionStarted', sessionId: 's1' });
    let finish: (() => void) | undefined;
    server.onRequest('agent/session/list', () => ({ sessions: [] }));
    server.onRequest(
      'agent/turn',
      (_p: unknown, _t: CancellationToken) =>
        new Promise((resolve) => (finish = () => resolve({ turnId: 't', stopReason: 'cancelled', usage: usage('s1') }))),
    );
    const interrupts: unknown[] = [];
    server.onRequest('agent/interrupt', (p: unknown) => {
      interrupts.push(p);
      finish?.();
      return {};
    });
    const turn = controller.send('go');
    await waitFor(() => finish !== undefined);
    expect(controller.state.turn.status).toBe('running');
    await controller.stop();
    await turn;
    expect(interrupts).toEqual([{ sessionId: 's1' }]);
    expect(controller.state.turn.status).toBe('idle');
    expect(controller.state.items.at(-1)).toMatchObject({ kind: 'notice', message: 'Stopped.' });
  });

  it('compacts with instructions and rewinds by reloading the branch', async () => {
    const { controller, server } = setup();
    controller.dispatch({ type: 'sessionStarted', sessionId: 's1' });
    const calls: [string, unknown][] = [];
    server.onRequest('agent/compact', (p: unknown) => {
      calls.push(['compact', p]);
      return { outcome: 'compacted', tokensBefore: 20000, tokensAfter: 5000, windowNumber: 2 };
    });
    server.onRequest('agent/usage', () => usage('s1', 5000));
    server.onRequest('agent/rewind', (p: unknown) => {
      calls.push(['rewind', p]);
      return { leafId: 'e1' };
    });
    server.onRequest('agent/session/load', () => ({
      sessionId: 's1',
      transcript: [{ kind: 'userMessage', entryId: 'e1', parentId: null, content: [{ type: 'text', text: 'first' }] }],
      usage: usage('s1', 10),
    }));
    await controller.compact(' keep the plan ');
    expect(controller.state.compacting).toBe(false);
    expect(controller.state.usage?.used).toBe(5000);
    await controller.rewind('e1');
    expect(calls).toEqual([
      ['compact', { sessionId: 's1', instructions: 'keep the plan' }],
      ['rewind', { sessionId: 's1', entryId: 'e1' }],
    ]);
    expect(controller.state.items).toHaveLength(1);
    expect(controller.state.usage?.used).toBe(10);
  });

  it('loads the history before the first page when asked, one page at a time', async () => {
    const { controller, server } = setup();
    const pages: Record<string, { transcript: unknown[]; cursor: string | null }> = {
      e3: { transcript: [{ kind: 'userMessage', entryId: 'e2', parentId: 'e1', content: [{ type: 'text', text: 'two' }] }], cursor: 'e2' },
      e2: { transcript: [{ kind: 'userMessage', entryId: 'e1', parentId: null, content: [{ type: 'text', text: 'one' }] }], cursor: null },
    };
    const asked: unknown[] = [];
    server.onRequest('agent/session/load', () => ({
      sessionId: 's1',
      transcript: [{ kind: 'userMessage', entryId: 'e3', parentId: 'e2', content: [{ type: 'text', text: 'three' }] }],
      cursor: 'e3',
      usage: usage('s1', 10),
    }));
    server.onRequest('agent/session/history', (p: { before: string }) => {
      asked.push(p);
      return { sessionId: 's1', ...pages[p.before] };
    });
    await controller.loadSession('s1');
    const twice = [controller.loadOlder(), controller.loadOlder()];
    await Promise.all(twice);
    expect(asked).toEqual([{ sessionId: 's1', before: 'e3', limit: 100 }]);
    await controller.loadOlder();
    await controller.loadOlder(); // nothing older: no request
    expect(asked).toHaveLength(2);
    expect(controller.state.items.map((i) => (i.kind === 'user' ? i.text : i.kind))).toEqual(['one', 'two', 'three']);
  });

  it('reports a configuration error from a turn', async () => {
    const { controller, server, configErrors } = setup();
    controller.dispatch({ type: 'sessionStarted', sessionId: 's1' });
    server.onRequest('agent/session/list', () => ({ sessions: [] }));
    server.onRequest('agent/turn', () => new ResponseError(-33010, 'Set ANTHROPIC_API_KEY, or use provider "sim" to try it offline'));
    await controller.send('hello');
    // The banner says what to do (with buttons); the prompt stays, marked not sent.
    expect(controller.state.problem).toBe('Set ANTHROPIC_API_KEY, or use provider "sim" to try it offline');
    expect(controller.state.items.at(-1)).toMatchObject({ kind: 'user', text: 'hello', pending: false, failed: expect.stringContaining('ANTHROPIC_API_KEY') });
    expect(configErrors).toEqual(['Set ANTHROPIC_API_KEY, or use provider "sim" to try it offline']);
    // After the fix the server restarts: the banner goes.
    controller.dispatch({ type: 'serverStatus', status: 'starting' }, { type: 'serverStatus', status: 'running' });
    expect(controller.state.problem).toBeUndefined();
    expect(controller.state.items.at(-1)).toMatchObject({ kind: 'user', text: 'hello' });
  });

  it('keeps a first prompt whose session could not be created', async () => {
    const { controller, server, configErrors } = setup();
    server.onRequest('agent/session/new', () => new ResponseError(-33010, 'No API key: set ANTHROPIC_API_KEY'));
    await controller.send('explain the build');
    expect(controller.state.sessionId).toBeUndefined();
    expect(controller.state.items).toEqual([
      expect.objectContaining({ kind: 'user', text: 'explain the build', failed: 'No API key: set ANTHROPIC_API_KEY' }),
    ]);
    expect(controller.state.turn.status).toBe('idle');
    expect(configErrors).toHaveLength(1);
    // Sent again once the key is there: the new session keeps the prompt that started it.
    server.onRequest('agent/session/new', () => ({ sessionId: 's9', usage: usage('s9') }));
    server.onRequest('agent/session/list', () => ({ sessions: [] }));
    let finish: ((value: unknown) => void) | undefined;
    server.onRequest('agent/turn', () => new Promise((resolve) => (finish = resolve)));
    const sending = controller.send('explain the build');
    await waitFor(() => controller.state.sessionId === 's9');
    expect(controller.state.items.filter((i) => i.kind === 'user')).toHaveLength(1);
    // The turn is finished once the server has it: the session's id comes first, and on a
    // busy machine the turn's request can still be on its way.
    await waitFor(() => finish !== undefined);
    finish?.({ turnId: 't', stopReason: 'end_turn', usage: usage('s9') });
    await sending;
  });

  it('reopens the newest session after a start', async () => {
    const { controller, server } = setup();
    server.onRequest('agent/session/list', () => ({
      sessions: [
        { sessionId: 'new', title: 'B', model: 'sim-small', createdAt: '2026-01-02T00:00:00Z', updatedAt: '2026-01-02T00:00:00Z', entryCount: 3 },
        { sessionId: 'old', title: 'A', model: 'sim-small', createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z', entryCount: 9 },
      ],
    }));
    server.onRequest('agent/session/load', (p: { sessionId: string }) => ({ sessionId: p.sessionId, transcript: [], usage: usage(p.sessionId) }));
    await controller.openInitialSession();
    expect(controller.state.sessionId).toBe('new');
    expect(controller.state.sessions).toHaveLength(2);
  });

  it('lets the session go when a restarted server does not list it, and a prompt starts one there', async () => {
    const { controller, server } = setup();
    server.onRequest('agent/session/list', () => ({
      sessions: [{ sessionId: 'old', title: 'A', model: 'sim-small', createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z', entryCount: 9 }],
    }));
    server.onRequest('agent/session/load', (p: { sessionId: string }) => ({ sessionId: p.sessionId, transcript: [], usage: usage(p.sessionId) }));
    await controller.openInitialSession();
    expect(controller.state.sessionId).toBe('old');
    // The server again, with another sessions folder: it lists none.
    server.onRequest('agent/session/list', () => ({ sessions: [] }));
    await controller.openInitialSession();
    expect(controller.state.sessionId).toBeUndefined();
    const { created, turns } = recordNewSessionsAndTurns(server);
    await controller.send('summarise what we did');
    await waitFor(() => turns.length === 1);
    expect(created).toHaveLength(1);
    expect(turns[0]?.sessionId).not.toBe('old');
  });

  it('waits for the server of the window before to let the session go, and the prompt typed meanwhile goes to it', async () => {
    const { controller, server, traced } = setup();
    server.onRequest('agent/session/list', () => ({
      sessions: [{ sessionId: 'held', title: 'A', model: 'sim-small', createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z', entryCount: 9 }],
    }));
    let refusals = 3;
    server.onRequest('agent/session/load', (p: { sessionId: string }) =>
      refusals-- > 0
        ? new ResponseError(-33005, 'session held is open elsewhere (pid 42); close it there first')
        : { sessionId: p.sessionId, transcript: [], usage: usage(p.sessionId) },
    );
    const { created, turns } = recordNewSessionsAndTurns(server);
    const opening = controller.openInitialSession();
    await controller.send('summarise what we did');
    await opening;
    await waitFor(() => turns.length === 1);
    expect(controller.state.sessionId).toBe('held');
    expect(turns[0]?.sessionId).toBe('held');
    expect(created).toHaveLength(0);
    // The wait is in the log, once.
    expect(traced.filter((t) => t.includes('still held'))).toEqual([
      'Session held is still held (session held is open elsewhere (pid 42); close it there first (another process has this session open)): waiting for it',
    ]);
  });

  it('keeps a prompt typed while the session reopens waiting when it cannot be reopened (no new session)', async () => {
    const { controller, server } = setup();
    server.onRequest('agent/session/list', () => ({
      sessions: [{ sessionId: 'broken', title: 'A', model: 'sim-small', createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z', entryCount: 9 }],
    }));
    let asked = false;
    let refuse: (() => void) | undefined;
    server.onRequest('agent/session/load', () => {
      asked = true;
      return new Promise((_, reject) => (refuse = () => reject(new ResponseError(-32603, 'the ledger cannot be read'))));
    });
    const { created, turns } = recordNewSessionsAndTurns(server);
    const opening = controller.openInitialSession();
    await waitFor(() => asked);
    await controller.send('summarise what we did');
    refuse!();
    await opening;
    expect(controller.state.restoring).toBe(false);
    expect(controller.state.queue.map((q) => q.text)).toEqual(['summarise what we did']);
    expect(controller.state.items.flatMap((i) => (i.kind === 'notice' ? [i.message] : [])).join(' ')).toMatch(/Could not load the session: the ledger cannot be read.*Send now/s);
    expect(created).toEqual([]);
    expect(turns).toEqual([]);
    // The user sends it: to a new session.
    await controller.sendQueued(controller.state.queue[0]!.id);
    await waitFor(() => turns.length === 1);
    expect(turns[0]?.sessionId).toBe('fresh');
  });

  it('a server restarted while the session reopens: the prompt typed meanwhile goes to the session the new server reopens', async () => {
    const { controller, server } = setup();
    const listed = { sessions: [{ sessionId: 'last', title: 'A', model: 'sim-small', createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z', entryCount: 9 }] };
    server.onRequest('agent/session/list', () => listed);
    let asked = false;
    server.onRequest('agent/session/load', () => {
      asked = true;
      return new Promise(() => undefined); // the server stops before it answers
    });
    const before = recordNewSessionsAndTurns(server);
    const firstOpening = controller.openInitialSession();
    await waitFor(() => asked);
    await controller.send('carry on');
    // The restart: the old connection goes, a new server runs and the session reopens there.
    const old = pair!;
    controller.detach();
    pair = connectionPair();
    controller.attach(new AgentClient(pair.client));
    pair.server.onRequest('agent/session/list', () => listed);
    let load: (() => void) | undefined;
    pair.server.onRequest('agent/session/load', (p: { sessionId: string }) =>
      new Promise((resolve) => (load = () => resolve({ sessionId: p.sessionId, transcript: [], usage: usage(p.sessionId) }))),
    );
    const after = recordNewSessionsAndTurns(pair.server);
    const secondOpening = controller.openInitialSession();
    old.dispose();
    await firstOpening;
    expect(controller.state.restoring).toBe(true);
    // The load the restart cut short is not reported as a failure.
    expect(controller.state.items.filter((i) => i.kind === 'notice')).toEqual([]);
    await waitFor(() => load !== undefined);
    load!();
    await secondOpening;
    await waitFor(() => after.turns.length === 1);
    expect(after.turns[0]).toMatchObject({ sessionId: 'last', prompt: 'carry on' });
    expect([...before.created, ...after.created, ...before.turns]).toEqual([]);
  });

  it('holds a prompt typed while the last session reopens, and sends it to that session', async () => {
    const { controller, server, traced } = setup();
    let listed: ((value: unknown) => void) | undefined;
    server.onRequest('agent/session/list', () => new Promise((resolve) => (listed ??= resolve)));
    server.onRequest('agent/session/load', (p: { sessionId: string }) => ({ sessionId: p.sessionId, transcript: [], usage: usage(p.sessionId), mode: 'allowReads' }));
    const { created, turns } = recordNewSessionsAndTurns(server);
    const opening = controller.openInitialSession();
    await waitFor(() => controller.state.restoring && listed !== undefined);
    await controller.send('continue where we left off');
    expect(controller.state.queue.map((q) => q.text)).toEqual(['continue where we left off']);
    expect(turns).toEqual([]);
    listed!({ sessions: [{ sessionId: 'last', title: 'A', model: 'sim-small', createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z', entryCount: 9 }] });
    await opening;
    await waitFor(() => turns.length === 1);
    expect(turns[0]).toMatchObject({ sessionId: 'last', prompt: 'continue where we left off' });
    expect(created).toEqual([]);
    expect(controller.state.queue).toEqual([]);
    // The log says where the prompt went (a failure in a real VS Code is read from it).
    expect(traced).toEqual([
      'A prompt typed while the session reopens: it waits for it',
      'Reopening: 1 session(s) in file:///w; loading last',
      'Reopening done (session last); 1 prompt(s) typed meanwhile go to it',
    ]);
  });

  it('sends what was typed ahead once the turn finishes; keeps it after a stop', async () => {
    const { controller, server } = setup();
    controller.dispatch({ type: 'sessionStarted', sessionId: 's1' });
    server.onRequest('agent/session/list', () => ({ sessions: [] }));
    const prompts: string[] = [];
    const finishers: ((stop: string) => void)[] = [];
    server.onRequest('agent/turn', (p: { prompt: string }) => {
      prompts.push(p.prompt);
      return new Promise((resolve) => finishers.push((stop) => resolve({ turnId: `t${prompts.length}`, stopReason: stop, usage: usage('s1') })));
    });
    const first = controller.send('first');
    await waitFor(() => finishers.length === 1);
    await controller.send('second');
    await controller.send('third');
    expect(controller.state.queue.map((q) => q.text)).toEqual(['second', 'third']);
    finishers[0]!('end_turn');
    await waitFor(() => finishers.length === 2);
    expect(prompts).toEqual(['first', 'second']);
    finishers[1]!('cancelled');
    await first;
    // Stopped: the rest waits for the user, who can send it now.
    expect(controller.state.queue.map((q) => q.text)).toEqual(['third']);
    expect(prompts).toHaveLength(2);
    const sending = controller.sendQueued(controller.state.queue[0]!.id);
    await waitFor(() => finishers.length === 3);
    finishers[2]!('end_turn');
    await sending;
    expect(prompts).toEqual(['first', 'second', 'third']);
  });

  it('puts the permission mode picked for a session back after a reload', async () => {
    const memory = new Map<string, unknown>();
    const first = setup(memory);
    first.controller.dispatch({ type: 'sessionStarted', sessionId: 's1', mode: 'allowReads' });
    first.server.onRequest('agent/mode/set', (p: { mode: string }) => ({ mode: p.mode }));
    await first.controller.setMode('allowAll');
    pair?.dispose();
    // A reloaded window: a new server, which opens the session in the setting's mode.
    const { controller, server } = setup(memory);
    const set: unknown[] = [];
    server.onRequest('agent/session/load', () => ({ sessionId: 's1', transcript: [], usage: usage('s1'), mode: 'allowReads' }));
    server.onRequest('agent/model/list', () => ({ provider: 'sim', current: 'sim-small', models: [] }));
    server.onRequest('agent/mode/set', (p: { mode: string }) => {
      set.push(p);
      return { mode: p.mode };
    });
    await controller.loadSession('s1');
    expect(set).toEqual([{ sessionId: 's1', mode: 'allowAll' }]);
    expect(controller.state.mode).toBe('allowAll');
  });

  it('answers a permission with the user\'s words or revised change', async () => {
    const { controller, server } = setup();
    controller.dispatch({ type: 'sessionStarted', sessionId: 's1' });
    const params: RequestPermissionParams = {
      sessionId: 's1',
      toolCall: { toolCallId: 'tc', title: 'Write a.txt', toolKind: 'edit', rawInput: { path: 'a.txt' } },
      options: [
        { optionId: 'allow_once', name: 'Allow', kind: 'allow_once' },
        { optionId: 'reject_once', name: 'Reject', kind: 'reject_once' },
      ],
    };
    const rejected = server.sendRequest('agent/requestPermission', params);
    await waitFor(() => controller.pendingPermissions === 1);
    let card = controller.state.items.filter((i) => i.kind === 'permission').at(-1) as PermissionItem;
    controller.answerPermission(card.requestId, 'reject_once', { message: '  Use b.txt instead. ' });
    expect(await rejected).toEqual({ outcome: { selected: 'reject_once', message: 'Use b.txt instead.' } });
    const revised = server.sendRequest('agent/requestPermission', params);
    await waitFor(() => controller.pendingPermissions === 1);
    card = controller.state.items.filter((i) => i.kind === 'permission').at(-1) as PermissionItem;
    controller.answerPermission(card.requestId, 'allow_once', { newText: 'mine\n' });
    expect(await revised).toEqual({ outcome: { selected: 'allow_once', newText: 'mine\n' } });
  });

  it('relays agent/mcp/status and accepts a tools change with agent/mcp/acceptTools', async () => {
    const { controller, server } = setup();
    server.onRequest('agent/session/new', () => ({ sessionId: 's1', usage: usage('s1') }));
    server.onRequest('agent/session/list', () => ({ sessions: [] }));
    const accepted: unknown[] = [];
    server.onRequest('agent/mcp/acceptTools', (params: unknown) => {
      accepted.push(params);
      return { accepted: true, deferred: false, tokens: 4200 };
    });
    await controller.newSession();
    await server.sendNotification('agent/mcp/status', {
      sessionId: 's1',
      toolCount: 8,
      servers: [],
      toolsChange: { added: ['mcp__a__b'], removed: [], changed: [], tokens: 4200 },
    });
    await waitFor(() => controller.state.mcp?.toolsChange?.tokens === 4200);
    await controller.acceptTools();
    expect(accepted).toEqual([{ sessionId: 's1' }]);
    const notice = controller.state.items.at(-1);
    expect(notice?.kind === 'notice' && notice.message).toContain('re-reads about 4200 tokens');
  });
});
