import { afterEach, describe, expect, it } from 'vitest';
import { CancellationTokenSource, ResponseError, type CancellationToken, type MessageConnection } from 'vscode-jsonrpc/node';
import { AgentClient, CancellationSource, isRpcError } from '../../src/protocol/client';
import type { CompactionParams, RequestPermissionParams, UsageSnapshot } from '../../src/protocol/types';
import { connectionPair, waitFor } from '../support/pipe';

let pair: ReturnType<typeof connectionPair> | undefined;
afterEach(() => {
  pair?.dispose();
  pair = undefined;
});

function setup(): { client: AgentClient; server: MessageConnection } {
  pair = connectionPair();
  return { client: new AgentClient(pair.client), server: pair.server };
}

const usage: UsageSnapshot = {
  sessionId: 's1',
  used: 100,
  size: 1000,
  compactAt: 800,
  windowNumber: 1,
  lastTurn: { input: 1, cacheRead: 2, cacheWrite: 3, output: 4, cost: 0 }, lastCall: { input: 1, cacheRead: 2, cacheWrite: 3, output: 4, cost: 0 }, session: { input: 1, cacheRead: 2, cacheWrite: 3, output: 4, cost: 0 },
  cacheHitRate: 0.5,
  cost: 0.001,
};

describe('AgentClient over a vscode-jsonrpc MessageConnection', () => {
  it('sends every request under its method name with its params as an object', async () => {
    const { client, server } = setup();
    const seen: [string, unknown][] = [];
    const answer = (method: string, result: unknown) =>
      server.onRequest(method, (params: unknown) => {
        seen.push([method, params]);
        return result;
      });
    answer('agent/session/new', { sessionId: 's1', usage });
    answer('agent/session/list', { sessions: [] });
    answer('agent/session/load', { sessionId: 's1', transcript: [], usage });
    answer('agent/turn', { turnId: 't1', stopReason: 'end_turn', usage });
    answer('agent/interrupt', {});
    answer('agent/compact', { outcome: 'noop', tokensBefore: 100, tokensAfter: 100, windowNumber: 1 });
    answer('agent/rewind', { leafId: 'e1' });
    answer('agent/usage', usage);

    expect(await client.request('sessionNew', { workspaceUri: 'file:///w', title: 'T' })).toEqual({ sessionId: 's1', usage });
    expect(await client.request('sessionList', { workspaceUri: 'file:///w' })).toEqual({ sessions: [] });
    expect((await client.request('sessionLoad', { sessionId: 's1' })).sessionId).toBe('s1');
    expect((await client.request('turn', { sessionId: 's1', prompt: [{ type: 'text', text: 'hi' }] })).stopReason).toBe('end_turn');
    expect(await client.request('interrupt', { sessionId: 's1' })).toEqual({});
    expect((await client.request('compact', { sessionId: 's1', instructions: 'keep the plan' })).outcome).toBe('noop');
    expect(await client.request('rewind', { sessionId: 's1', entryId: 'e1' })).toEqual({ leafId: 'e1' });
    expect(await client.request('usage', { sessionId: 's1' })).toEqual(usage);
    expect(seen).toEqual([
      ['agent/session/new', { workspaceUri: 'file:///w', title: 'T' }],
      ['agent/session/list', { workspaceUri: 'file:///w' }],
      ['agent/session/load', { sessionId: 's1' }],
      ['agent/turn', { sessionId: 's1', prompt: [{ type: 'text', text: 'hi' }] }],
      ['agent/interrupt', { sessionId: 's1' }],
      ['agent/compact', { sessionId: 's1', instructions: 'keep the plan' }],
      ['agent/rewind', { sessionId: 's1', entryId: 'e1' }],
      ['agent/usage', { sessionId: 's1' }],
    ]);
  });

  it('delivers the four notifications to typed handlers', async () => {
    const { client, server } = setup();
    const got: string[] = [];
    client.on('update', (p) => got.push(`update:${p.seq}:${p.update.kind}`));
    client.on('usage', (p) => got.push(`usage:${p.used}`));
    client.on('compaction', (p) => got.push(`compaction:${p.status}`));
    client.on('overflow', (p) => got.push(`overflow:${p.action}`));
    await server.sendNotification('agent/update', {
      sessionId: 's1',
      turnId: 't1',
      seq: 0,
      update: { kind: 'messageChunk', messageId: 'm', content: { type: 'text', text: 'x' } },
    });
    await server.sendNotification('agent/usage', usage);
    const c: CompactionParams = { sessionId: 's1', compactionId: 'c', status: 'started', reason: 'manual', tokensBefore: 5 };
    await server.sendNotification('agent/compaction', c);
    await server.sendNotification('agent/overflow', { sessionId: 's1', turnId: 't1', kind: 'truncated', action: 'compacting', message: 'm' });
    await waitFor(() => got.length === 4);
    expect(got).toEqual(['update:0:messageChunk', 'usage:100', 'compaction:started', 'overflow:compacting']);
  });

  it('answers agent/requestPermission with the handler result, and "cancelled" on $/cancelRequest', async () => {
    const { client, server } = setup();
    const params: RequestPermissionParams = {
      sessionId: 's1',
      toolCall: { toolCallId: 'tc', title: 'bash ls', toolKind: 'execute', rawInput: { command: 'ls' } },
      options: [{ optionId: 'yes', name: 'Allow once', kind: 'allow_once' }],
    };
    // The first question is answered at once; the second waits for the cancel alone (no
    // timer racing it), sent once the handler has the question.
    let answerAtOnce = true;
    let entered: () => void = () => {};
    client.onRequestPermission((_p, token) => {
      if (token.isCancellationRequested) return { outcome: 'cancelled' };
      if (answerAtOnce) return { outcome: { selected: 'yes' } };
      return new Promise((resolve) => {
        token.onCancellationRequested(() => resolve({ outcome: 'cancelled' }));
        entered();
      });
    });
    expect(await server.sendRequest('agent/requestPermission', params)).toEqual({ outcome: { selected: 'yes' } });

    answerAtOnce = false;
    const asked = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const source = new CancellationTokenSource();
    const pending = server.sendRequest('agent/requestPermission', params, source.token);
    await asked;
    source.cancel();
    // The handler saw the cancel and answered the request with the "cancelled" outcome.
    expect(await pending).toEqual({ outcome: 'cancelled' });
  });

  it('cancels a turn with $/cancelRequest through CancellationSource', async () => {
    const { client, server } = setup();
    let received = false;
    let cancelled = false;
    server.onRequest('agent/turn', (_params: unknown, token: CancellationToken) =>
      new Promise((resolve) => {
        received = true;
        token.onCancellationRequested(() => {
          cancelled = true;
          resolve({ turnId: 't', stopReason: 'cancelled', usage });
        });
      }),
    );
    const source = new CancellationSource();
    const turn = client.request('turn', { sessionId: 's1', prompt: 'long' }, source.token);
    // Cancelled once the server has the turn: a token cancelled before the request goes out
    // sends nothing at all (what a busy machine made of a fixed 10 ms).
    await waitFor(() => received);
    source.cancel();
    await turn.catch(() => undefined);
    await waitFor(() => cancelled);
    expect(cancelled).toBe(true);
  });

  it('surfaces server errors with their JSON-RPC code', async () => {
    const { client, server } = setup();
    server.onRequest('agent/session/load', () => new ResponseError(-33001, 'unknown session s9', { sessionId: 's9' }));
    const error = await client.request('sessionLoad', { sessionId: 's9' }).catch((e: unknown) => e);
    expect(isRpcError(error)).toBe(true);
    expect(error).toMatchObject({ code: -33001, message: 'unknown session s9' });
  });
});
