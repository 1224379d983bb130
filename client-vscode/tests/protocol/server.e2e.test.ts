/**
 * Protocol end to end: vscode-jsonrpc drives the real Python server over stdio through the same
 * AgentClient the extension uses. Provider "sim" (the built-in simulator: no key, no network),
 * a temp workspace holding the simulator's sample repository, a temp sessionsDir, and
 * permissions.mode "ask" so every tool call asks.
 *
 * Needs the repository's .venv with agent-server installed (`make` at the root).
 */
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter, type MessageConnection } from 'vscode-jsonrpc/node';
import { AgentClient, initializationOptions } from '../../src/protocol/client';
import type {
  AgentSettings,
  AgentUpdateParams,
  CompactionParams,
  RequestPermissionParams,
  ToolCallUpdateStart,
  UsageSnapshot,
} from '../../src/protocol/types';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const PYTHON = process.env['AGENT_SERVER_PYTHON'] ?? join(REPO, '.venv', 'bin', 'python');

/** The first prompts of the simulator's built-in scenario (agent_server/sim/scenarios/default.yaml). */
const PROMPT_1 = 'Give me an overview of this repository: what it does and how it is laid out.';
const PROMPT_2 = 'How are stock items modelled? Walk me through the models module.';
const PROMPT_3 = 'Where is the data persisted and in what format?';
const PROMPT_4 = 'The application log has errors. Find out what fails most often.';

let tmp: string;
let workspace: string;
let server: ChildProcessWithoutNullStreams;
let connection: MessageConnection;
let client: AgentClient;
let stderr = '';
const updates: AgentUpdateParams[] = [];
const usages: UsageSnapshot[] = [];
const compactions: CompactionParams[] = [];
const permissionRequests: RequestPermissionParams[] = [];
/** How to answer the next permission requests; default: allow once. */
let permissionPolicy: (p: RequestPermissionParams, token: { isCancellationRequested: boolean; onCancellationRequested(l: () => void): unknown }) => Promise<unknown> | unknown =
  (p) => ({ outcome: { selected: optionOf(p, 'allow_once') } });

function optionOf(p: RequestPermissionParams, kind: string): string {
  const option = p.options.find((o) => o.kind === kind);
  if (!option) throw new Error(`no ${kind} option in ${JSON.stringify(p.options)}`);
  return option.optionId;
}

let settings: AgentSettings;

beforeAll(async () => {
  if (!existsSync(PYTHON)) {
    throw new Error(`${PYTHON} not found: run \`make\` at the repository root first (or set AGENT_SERVER_PYTHON)`);
  }
  tmp = mkdtempSync(join(tmpdir(), 'agent-protocol-'));
  workspace = join(tmp, 'stockroom');
  const sessionsDir = join(tmp, 'sessions');
  const made = spawnSync(
    PYTHON,
    ['-c', 'import sys, pathlib; from agent_server.sim.workspace import write_sample_workspace; write_sample_workspace(pathlib.Path(sys.argv[1]))', workspace],
    { encoding: 'utf8' },
  );
  if (made.status !== 0) throw new Error(`could not write the sample workspace: ${made.stderr}`);
  // A small verbatim tail, so that a manual compaction after three turns has history to summarise.
  settings = { provider: 'sim', sessionsDir, permissions: { mode: 'ask' }, compaction: { keepRecentTokens: 2000 } };

  const env = { ...process.env };
  delete env['ANTHROPIC_API_KEY'];
  delete env['OPENAI_API_KEY'];
  server = spawn(PYTHON, ['-m', 'agent_server', '--log-level', 'INFO', 'serve', '--trust-editor-settings'], { cwd: workspace, env: { ...env, PYTHONUNBUFFERED: '1' } });
  server.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    if (stderr.length > 200_000) stderr = stderr.slice(-100_000);
  });
  connection = createMessageConnection(new StreamMessageReader(server.stdout), new StreamMessageWriter(server.stdin));
  // Standard LSP requests a client answers.
  connection.onRequest('workspace/configuration', (params: { items: { section?: string }[] }) =>
    params.items.map((item) => (item.section === 'agent' ? settings : null)),
  );
  connection.onRequest('window/workDoneProgress/create', () => null);
  connection.onRequest('client/registerCapability', () => null);
  connection.onRequest('window/showMessageRequest', () => null);
  connection.onNotification('window/logMessage', () => undefined);
  connection.onNotification('window/showMessage', () => undefined);
  connection.onNotification('$/progress', () => undefined);
  connection.listen();

  client = new AgentClient(connection);
  client.on('update', (p) => updates.push(p));
  client.on('usage', (p) => usages.push(p));
  client.on('compaction', (p) => compactions.push(p));
  client.onRequestPermission((p, token) => {
    permissionRequests.push(p);
    return permissionPolicy(p, token) as never;
  });

  const uri = pathToFileURL(workspace).toString();
  await connection.sendRequest('initialize', {
    processId: process.pid,
    clientInfo: { name: 'agent-server protocol test' },
    rootUri: uri,
    workspaceFolders: [{ uri, name: 'stockroom' }],
    capabilities: { workspace: { configuration: true, workspaceFolders: true }, window: { workDoneProgress: true } },
    initializationOptions: initializationOptions(settings),
  });
  await connection.sendNotification('initialized', {});
});

afterAll(async () => {
  try {
    if (connection) {
      await Promise.race([connection.sendRequest('shutdown'), new Promise((r) => setTimeout(r, 5000))]);
      await connection.sendNotification('exit');
      connection.dispose();
    }
  } catch {
    // the server may already be gone
  }
  if (server && server.exitCode === null) {
    await Promise.race([new Promise((r) => server.once('exit', r)), new Promise((r) => setTimeout(r, 5000))]);
    if (server.exitCode === null) server.kill();
  }
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

function turnUpdates(turnId: string): AgentUpdateParams[] {
  return updates.filter((u) => u.turnId === turnId);
}

function withServerLog<T>(promise: Promise<T>): Promise<T> {
  return promise.catch((error: unknown) => {
    const log = stderr
      .split('\n')
      .filter((line) => !line.includes('pygls.protocol.json_rpc'))
      .slice(-40)
      .join('\n');
    throw new Error(`${error instanceof Error ? error.message : JSON.stringify(error)}\n--- server stderr (tail) ---\n${log}`);
  });
}

describe('agent-server over stdio', () => {
  let sessionId: string;

  it('creates a session on the sim provider (sim-small, 32k window)', async () => {
    const workspaceUri = pathToFileURL(workspace).toString();
    const created = await withServerLog(client.request('sessionNew', { workspaceUri, title: 'protocol test' }));
    sessionId = created.sessionId;
    expect(sessionId).toMatch(/\S/);
    expect(created.usage).toMatchObject({ sessionId, size: 32768 });
    const { sessions } = await withServerLog(client.request('sessionList', { workspaceUri }));
    expect(sessions.map((s) => s.sessionId)).toContain(sessionId);
  });

  it('runs a turn: updates stream in seq order, every tool call asks permission, a final result', async () => {
    const usagesBefore = usages.length;
    const result = await withServerLog(client.request('turn', { sessionId, prompt: PROMPT_1 }));
    expect(result.stopReason).toBe('end_turn');
    expect(result.usage.sessionId).toBe(sessionId);

    const mine = turnUpdates(result.turnId);
    expect(mine.length).toBeGreaterThan(3);
    expect(mine.every((u) => u.sessionId === sessionId)).toBe(true);
    expect(mine.map((u) => u.seq)).toEqual(mine.map((_, i) => i));
    const first = mine[0]?.update;
    expect(first).toMatchObject({ kind: 'userMessage', content: [{ type: 'text', text: PROMPT_1 }] });
    expect(first?.kind === 'userMessage' && first.entryId).toBeTruthy();

    const kinds = new Set(mine.map((u) => u.update.kind));
    expect(kinds).toContain('messageChunk');
    expect(kinds).toContain('toolCall');
    expect(kinds).toContain('toolCallUpdate');
    const text = mine
      .map((u) => (u.update.kind === 'messageChunk' ? u.update.content.text : ''))
      .join('');
    expect(text).toContain('stockroom');

    // Each tool call was announced pending, asked for (mode "ask"), allowed and completed.
    const calls = mine.map((u) => u.update).filter((u): u is ToolCallUpdateStart => u.kind === 'toolCall');
    expect(calls.length).toBeGreaterThan(0);
    for (const call of calls) {
      expect(call.status).toBe('pending');
      expect(['read', 'edit', 'search', 'execute', 'other']).toContain(call.toolKind);
      const asked = permissionRequests.find((p) => p.toolCall.toolCallId === call.toolCallId);
      expect(asked, `permission asked for ${call.title}`).toBeDefined();
      expect(asked?.sessionId).toBe(sessionId);
      expect(asked?.options.map((o) => o.kind)).toEqual(expect.arrayContaining(['allow_once', 'reject_once']));
      const statuses = mine
        .map((u) => u.update)
        .filter((u) => u.kind === 'toolCallUpdate' && u.toolCallId === call.toolCallId)
        .map((u) => (u.kind === 'toolCallUpdate' ? u.status : undefined));
      expect(statuses.at(-1)).toBe('completed');
    }

    // Usage after every model call.
    const fresh = usages.slice(usagesBefore).filter((u) => u.sessionId === sessionId);
    expect(fresh.length).toBeGreaterThan(0);
    expect(fresh.at(-1)?.used).toBeGreaterThan(0);
    expect(fresh.at(-1)?.size).toBe(32768);
  });

  it('a rejected permission fails that tool call and the turn goes on', async () => {
    let rejected = 0;
    permissionPolicy = (p) => {
      if (rejected === 0) {
        rejected++;
        return { outcome: { selected: optionOf(p, 'reject_once') } };
      }
      return { outcome: { selected: optionOf(p, 'allow_once') } };
    };
    const asked = permissionRequests.length;
    const result = await withServerLog(client.request('turn', { sessionId, prompt: PROMPT_2 }));
    permissionPolicy = (p) => ({ outcome: { selected: optionOf(p, 'allow_once') } });
    expect(result.stopReason).toBe('end_turn');
    const firstAsked = permissionRequests[asked];
    expect(firstAsked).toBeDefined();
    const statuses = turnUpdates(result.turnId)
      .map((u) => u.update)
      .filter((u) => u.kind === 'toolCallUpdate' && u.toolCallId === firstAsked?.toolCall.toolCallId)
      .map((u) => (u.kind === 'toolCallUpdate' ? u.status : undefined));
    expect(statuses.at(-1)).toBe('failed');
  });

  it('compacts on request: started then completed, fewer tokens, a marker in the transcript', async () => {
    const third = await withServerLog(client.request('turn', { sessionId, prompt: PROMPT_3 }));
    expect(third.stopReason).toBe('end_turn');
    const before = compactions.length;
    const result = await withServerLog(client.request('compact', { sessionId, instructions: 'Keep the file names.' }));
    expect(result.outcome).toBe('compacted');
    expect(result.tokensAfter).toBeLessThan(result.tokensBefore);
    expect(result.windowNumber).toBe(2);

    const events = compactions.slice(before).filter((c) => c.sessionId === sessionId);
    expect(events.map((c) => c.status)).toEqual(['started', 'completed']);
    const [started, completed] = events as [CompactionParams, CompactionParams];
    expect(completed.compactionId).toBe(started.compactionId);
    expect(started.reason).toBe('manual');
    expect(completed.tokensAfter).toBe(result.tokensAfter);
    expect(completed.summary).toMatch(/\S/);

    const loaded = await withServerLog(client.request('sessionLoad', { sessionId }));
    const markers = loaded.transcript.filter((t) => t.kind === 'compaction');
    expect(markers).toHaveLength(1);
    expect(markers[0]).toMatchObject({ reason: 'manual', tokensBefore: result.tokensBefore, tokensAfter: result.tokensAfter });
    // The ledger keeps everything: the first prompt is still in the transcript.
    expect(JSON.stringify(loaded.transcript)).toContain(PROMPT_1);
    const usage = await withServerLog(client.request('usage', { sessionId }));
    expect(usage.windowNumber).toBe(2);
    expect(usage.used).toBeLessThan(result.tokensBefore);
  });

  it('interrupting a turn cancels its pending permission request', async () => {
    let cancelledSeen = false;
    permissionPolicy = (_p, token) =>
      new Promise((resolve) => {
        token.onCancellationRequested(() => {
          cancelledSeen = true;
          resolve({ outcome: 'cancelled' });
        });
        void client.request('interrupt', { sessionId });
      });
    const result = await withServerLog(client.request('turn', { sessionId, prompt: PROMPT_4 }));
    permissionPolicy = (p) => ({ outcome: { selected: optionOf(p, 'allow_once') } });
    expect(result.stopReason).toBe('cancelled');
    expect(cancelledSeen).toBe(true);
  });

  it('rewinds to an earlier message and reloads that branch', async () => {
    const loaded = await withServerLog(client.request('sessionLoad', { sessionId }));
    const firstUser = loaded.transcript.find((t) => t.kind === 'userMessage');
    expect(firstUser?.kind).toBe('userMessage');
    const entryId = firstUser?.kind === 'userMessage' ? firstUser.entryId : '';
    const { leafId } = await withServerLog(client.request('rewind', { sessionId, entryId }));
    expect(leafId).toBeTruthy();
    const after = await withServerLog(client.request('sessionLoad', { sessionId }));
    expect(after.leafId).toBe(leafId);
    expect(after.transcript.length).toBeLessThan(loaded.transcript.length);
  });

  it('pages the transcript: the latest page and a cursor, then the history before it', async () => {
    const whole = await withServerLog(client.request('sessionLoad', { sessionId }));
    const first = await withServerLog(client.request('sessionLoad', { sessionId, limit: 1 }));
    let items = first.transcript;
    let cursor = first.cursor;
    let pages = 1;
    while (cursor) {
      const older = await withServerLog(client.request('sessionHistory', { sessionId, before: cursor, limit: 1 }));
      items = [...older.transcript, ...items];
      cursor = older.cursor;
      pages += 1;
    }
    expect(pages).toBeGreaterThan(1);
    expect(items).toEqual(whole.transcript);
  });

  it('lists and switches models, switches the mode, completes @-mentions', async () => {
    const workspaceUri = pathToFileURL(workspace).toString();
    const listed = await withServerLog(client.request('modelList', { workspaceUri }));
    expect(listed.provider).toBe('sim');
    expect(listed.models.map((m) => [m.id, m.contextWindow, m.current])).toEqual([
      ['sim-small', 32768, true],
      ['sim-large', 200000, false],
    ]);
    expect(listed.models[1]?.pricing.input).toBeGreaterThan(0);
    const created = await withServerLog(client.request('sessionNew', { workspaceUri, title: 'picker' }));
    expect(created.model?.id).toBe('sim-small');
    expect(created.mode).toBe('ask');
    await withServerLog(client.request('turn', { sessionId: created.sessionId, prompt: PROMPT_1 }));
    const switched = await withServerLog(client.request('modelSet', { sessionId: created.sessionId, model: 'sim-large' }));
    expect(switched.model).toMatchObject({ id: 'sim-large', contextWindow: 200000 });
    expect(switched.entryId).toEqual(expect.any(String));
    expect(switched.cost.tokens).toBeGreaterThan(0);
    expect(switched.note).toContain('cache');
    expect(switched.usage.size).toBe(200000);
    await expect(client.request('modelSet', { sessionId: created.sessionId, model: 'no-such-model' })).rejects.toMatchObject({ code: -33010, message: expect.stringContaining('sim-large') });
    expect((await withServerLog(client.request('modeSet', { sessionId: created.sessionId, mode: 'allowAll' }))).mode).toBe('allowAll');
    const loaded = await withServerLog(client.request('sessionLoad', { sessionId: created.sessionId }));
    expect(loaded.model?.id).toBe('sim-large');
    expect(loaded.mode).toBe('allowAll');
    expect(loaded.transcript.at(-1)).toMatchObject({ kind: 'modelChange', model: 'sim-large' });
    expect(loaded).toMatchObject({ thinking: 'off', canThink: true });
    const thinking = await withServerLog(client.request('thinkingSet', { sessionId: created.sessionId, thinking: 'medium' }));
    expect(thinking).toMatchObject({ thinking: 'medium', canThink: true, entryId: expect.any(String) });
    expect(thinking.note).toContain('Thinking: medium effort (was off)');
    const again = await withServerLog(client.request('sessionLoad', { sessionId: created.sessionId }));
    expect(again.thinking).toBe('medium');
    expect(again.transcript.at(-1)).toMatchObject({ kind: 'modelChange', model: 'sim-large', thinking: 'medium' });
    const mentions = await withServerLog(client.request('mentionComplete', { workspaceUri, query: 'READ' }));
    expect(mentions.items[0]).toEqual({ path: 'README.md', kind: 'file' });
    const folders = await withServerLog(client.request('mentionComplete', { workspaceUri, query: 'sr', limit: 5 }));
    expect(folders.items[0]).toEqual({ path: 'src/', kind: 'directory' });
  });

  it('answers bad params with InvalidParams (-32602) and unknown sessions with -33001', async () => {
    await expect(client.request('sessionLoad', { sessionId: '' })).rejects.toMatchObject({ code: -32602 });
    await expect(client.request('usage', { sessionId: 'no-such-session' })).rejects.toMatchObject({ code: -33001 });
  });
});
