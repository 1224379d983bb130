/**
 * The model picker, the mode switch, @-mentions, images and rewinding with files: the
 * controller's calls over a real JSON-RPC pipe, and what the reducer makes of the answers.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { MessageConnection } from 'vscode-jsonrpc/node';
import { SessionController } from '../../src/controller';
import { AgentClient } from '../../src/protocol/client';
import type { ModelChoice, RewindPreviewResult, UsageSnapshot } from '../../src/protocol/types';
import { initialState, itemsFromTranscript, reduce, type Action, type UserItem } from '../../src/state/reducer';
import { applyMention, imageFromDataUrl, imageProblem, imageSrc, mentionAt, mentionsFromUris } from '../../src/webview/composer';
import { usageSnapshot } from '../support/usage';
import { connectionPair } from '../support/pipe';

let pair: ReturnType<typeof connectionPair> | undefined;
afterEach(() => {
  pair?.dispose();
  pair = undefined;
});

const usage = (sessionId: string, used = 0): UsageSnapshot => usageSnapshot(sessionId, used, 200000);

const model = (id: string, current = false): ModelChoice => ({
  id,
  name: id.toUpperCase(),
  contextWindow: 200000,
  vendor: 'sim',
  maxOutput: 8192,
  pricing: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  images: true,
  thinking: true,
  source: 'builtin',
  current,
});

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';

function setup(): { controller: SessionController; server: MessageConnection; calls: [string, unknown][] } {
  pair = connectionPair();
  const controller = new SessionController({ publish: () => undefined });
  controller.attach(new AgentClient(pair.client));
  controller.dispatch({ type: 'serverStatus', status: 'running' });
  controller.setWorkspace('file:///w');
  const calls: [string, unknown][] = [];
  const server = pair.server;
  const record = (method: string, answer: (p: never) => unknown): void => {
    server.onRequest(method, (p: never) => {
      calls.push([method, p]);
      return answer(p);
    });
  };
  record('agent/model/list', () => ({ provider: 'sim', current: 'a', models: [model('a', true), model('b')] }));
  record('agent/session/list', () => ({ sessions: [] }));
  record('agent/session/new', (p: { model?: string }) => ({
    sessionId: 's1',
    usage: usage('s1'),
    model: { id: p.model ?? 'a', name: (p.model ?? 'a').toUpperCase(), contextWindow: 200000 },
    mode: 'ask',
  }));
  record('agent/mode/set', (p: { mode: string }) => ({
    model: { id: 'b', name: 'B', contextWindow: 200000 },
    mode: p.mode,
    // tools.sandbox "auto": commands are sandboxed when nothing asks
    sandbox: { sandboxed: p.mode === 'allowAll', network: false },
  }));
  record('agent/model/set', (p: { model: string }) => ({
    model: { id: p.model, name: p.model.toUpperCase(), contextWindow: 200000 },
    entryId: 'e5',
    cost: { tokens: 1000, switchedCost: 0.01, stayedCost: 0.001, compacts: false, compactAt: 150000, window: 200000 },
    note: 'The next request writes 1k tokens to B’s cache.',
    usage: usage('s1', 1000),
  }));
  record('agent/turn', () => ({ turnId: 't1', stopReason: 'end_turn', usage: usage('s1', 10) }));
  return { controller, server, calls };
}

describe('model and mode', () => {
  it('lists the models before a session, starts the session with the ones picked, switches later with a marker', async () => {
    const { controller, calls } = setup();
    await controller.openInitialSession();
    expect(controller.state.models.map((m) => m.id)).toEqual(['a', 'b']);
    expect(controller.state.model?.id).toBe('a');
    await controller.setModel('b');
    await controller.setMode('allowReads');
    expect(controller.state.model?.id).toBe('b');
    expect(controller.state.mode).toBe('allowReads');
    // Nothing asked of a session yet: the picks wait for the first prompt.
    expect(calls.map(([m]) => m)).not.toContain('agent/model/set');
    await controller.send('hello');
    expect(calls).toContainEqual(['agent/session/new', { workspaceUri: 'file:///w', model: 'b' }]);
    expect(calls).toContainEqual(['agent/mode/set', { sessionId: 's1', mode: 'allowReads' }]);
    expect(controller.state.mode).toBe('allowReads');

    await controller.setModel('a');
    expect(calls).toContainEqual(['agent/model/set', { sessionId: 's1', model: 'a' }]);
    expect(controller.state.model).toEqual({ id: 'a', name: 'A', contextWindow: 200000 });
    expect(controller.state.items.at(-1)).toMatchObject({ kind: 'modelChange', model: 'a', note: expect.stringContaining('cache') });
    expect(controller.state.usage?.used).toBe(1000);
    expect(controller.state.sandbox).toEqual({ sandboxed: false, network: false });
    await controller.setMode('allowAll');
    expect(calls.at(-1)).toEqual(['agent/mode/set', { sessionId: 's1', mode: 'allowAll' }]);
    expect(controller.state.sandbox).toEqual({ sandboxed: true, network: false });
  });

  it('says why a switch failed and keeps the model the session has', async () => {
    const { controller, server } = setup();
    controller.dispatch({ type: 'sessionStarted', sessionId: 's1', model: { id: 'a', name: 'A', contextWindow: 1 } });
    server.onRequest('agent/model/set', () => {
      throw new Error('unknown model "zzz"');
    });
    await controller.setModel('zzz');
    expect(controller.state.model?.id).toBe('a');
    expect(controller.state.items.at(-1)).toMatchObject({ kind: 'notice', level: 'error', message: expect.stringContaining('Could not switch the model') });
  });
});

describe('prompts with images and mentions', () => {
  it('sends pasted images as image blocks after the text, and shows them at once', async () => {
    const { controller, calls } = setup();
    controller.dispatch({ type: 'sessionStarted', sessionId: 's1' });
    const image = { type: 'image' as const, mimeType: 'image/png', data: PNG };
    await controller.send('what is this? @src/', [image]);
    expect(calls.find(([m]) => m === 'agent/turn')?.[1]).toMatchObject({
      sessionId: 's1',
      prompt: [{ type: 'text', text: 'what is this? @src/' }, image],
    });
    const shown = controller.state.items[0] as UserItem;
    expect(shown.images).toEqual([image]);
  });

  it('asks for mention completions and keeps the answer for its query', async () => {
    const { controller, server } = setup();
    server.onRequest('agent/mention/complete', (p: { query: string }) => ({ items: [{ path: `${p.query}x.py`, kind: 'file' }] }));
    await controller.completeMention('src/');
    expect(controller.state.mentions).toEqual({ query: 'src/', items: [{ path: 'src/x.py', kind: 'file' }] });
  });

  it('keeps the completions of the latest query when an older answer comes back last', async () => {
    const { controller, server } = setup();
    const held: (() => void)[] = [];
    server.onRequest('agent/mention/complete', async (p: { query: string }) => {
      // The answer for "RE" waits until "READ" has been answered.
      if (p.query === 'RE') await new Promise<void>((resolve) => held.push(resolve));
      return { items: [{ path: `${p.query}.md`, kind: 'file' }] };
    });
    const older = controller.completeMention('RE');
    await controller.completeMention('READ');
    expect(held).toHaveLength(1);
    held[0]!();
    await older;
    expect(controller.state.mentions).toEqual({ query: 'READ', items: [{ path: 'READ.md', kind: 'file' }] });
  });

  it('shows a recorded prompt with its attachments and images', () => {
    const items = itemsFromTranscript([
      {
        kind: 'userMessage',
        entryId: 'e1',
        parentId: null,
        content: [{ type: 'text', text: 'see @a.py' }, { type: 'image', mimeType: 'image/png', data: PNG }],
        attachments: [{ path: 'a.py', kind: 'file', detail: '3 lines' }],
      },
    ]);
    expect(items[0]).toMatchObject({ kind: 'user', text: 'see @a.py', attachments: [{ path: 'a.py', kind: 'file' }] });
    expect((items[0] as UserItem).images).toHaveLength(1);
  });
});

describe('rewind with files', () => {
  const preview: RewindPreviewResult = {
    entryId: 'e3',
    prompt: [{ type: 'text', text: 'make it faster' }],
    files: [
      { path: 'a.py', action: 'restore', changedSince: false },
      { path: 'new.py', action: 'delete', changedSince: true },
    ],
    notRestorable: { commands: ['make gen'], files: ['gen.c'], moreFiles: 0 },
  };

  it('previews, restores both and gives the prompt back to the input box', async () => {
    const { controller, server, calls } = setup();
    controller.dispatch({ type: 'sessionStarted', sessionId: 's1' });
    server.onRequest('agent/rewind/preview', (p: unknown) => {
      calls.push(['preview', p]);
      return preview;
    });
    server.onRequest('agent/rewind', (p: unknown) => {
      calls.push(['rewind', p]);
      return {
        leafId: 'e2',
        prompt: preview.prompt,
        files: [
          { path: 'a.py', action: 'restore' },
          { path: 'new.py', action: 'delete' },
        ],
      };
    });
    server.onRequest('agent/session/load', () => ({
      sessionId: 's1',
      transcript: [
        { kind: 'userMessage', entryId: 'e1', parentId: null, content: [{ type: 'text', text: 'first' }] },
        { kind: 'fileRestore', entryId: 'e9', targetId: 'e3', files: [{ path: 'a.py', action: 'restore' }, { path: 'new.py', action: 'delete' }] },
      ],
      usage: usage('s1', 10),
    }));
    await controller.previewRewind('e3');
    expect(controller.state.rewind).toEqual({ entryId: 'e3', busy: false, preview });
    await controller.rewind('e3', 'both');
    expect(calls).toContainEqual(['preview', { sessionId: 's1', entryId: 'e3' }]);
    expect(calls).toContainEqual(['rewind', { sessionId: 's1', entryId: 'e3', restore: 'both' }]);
    expect(controller.state.rewind).toBeUndefined();
    expect(controller.state.draft).toMatchObject({ text: 'make it faster', images: [] });
    expect(controller.state.items.at(-1)).toMatchObject({ kind: 'fileRestore', files: [{ path: 'a.py' }, { path: 'new.py', action: 'delete' }] });
    const seq = controller.state.draft?.seq ?? -1;
    controller.takeDraft(seq);
    expect(controller.state.draft).toBeUndefined();
  });

  it('a files-only rewind keeps the input box as it is; problems are shown', () => {
    let state = reduce(initialState(), { type: 'sessionStarted', sessionId: 's1' });
    const actions: Action[] = [
      { type: 'rewindRequested', entryId: 'e3' },
      { type: 'rewindPreviewed', preview },
      { type: 'rewindStarted' },
      { type: 'rewound', restore: 'files', result: { leafId: 'e8', prompt: preview.prompt, files: [], problems: ['gen.c: changed by a command'] } },
    ];
    for (const a of actions) state = reduce(state, a);
    expect(state.draft).toBeUndefined();
    expect(state.items.at(-1)).toMatchObject({ kind: 'notice', level: 'error', message: 'Not restored: gen.c: changed by a command' });
  });

  it('ignores a preview for another entry, and a failure closes the panel with the reason', () => {
    let state = reduce(initialState(), { type: 'rewindRequested', entryId: 'e4' });
    state = reduce(state, { type: 'rewindPreviewed', preview });
    expect(state.rewind?.preview).toBeUndefined();
    state = reduce(state, { type: 'rewindFailed', message: 'Could not rewind: busy' });
    expect(state.rewind).toBeUndefined();
    expect(state.items.at(-1)).toMatchObject({ kind: 'notice', message: 'Could not rewind: busy' });
  });
});

describe('composer helpers', () => {
  it('finds the mention at the caret, only after a space or at the start', () => {
    expect(mentionAt('look at @src/ma', 15)).toEqual({ start: 8, end: 15, query: 'src/ma' });
    expect(mentionAt('@', 1)).toEqual({ start: 0, end: 1, query: '' });
    expect(mentionAt('mail me@example', 15)).toBeUndefined();
    expect(mentionAt('@a.py done', 10)).toBeUndefined();
  });

  it('completes a file with a space, a folder to go on into it, a path with spaces quoted', () => {
    const token = { start: 4, end: 9, query: 'src/' };
    expect(applyMention('see @src/ now', token, { path: 'src/app.py', kind: 'file' })).toEqual({ text: 'see @src/app.py  now', caret: 16 });
    expect(applyMention('see @src/', token, { path: 'src/lib/', kind: 'directory' })).toEqual({ text: 'see @src/lib/', caret: 13 });
    expect(applyMention('see @src/', token, { path: 'src/my notes.md', kind: 'file' }).text).toBe('see @"src/my notes.md" ');
  });

  it('mentions workspace files dropped from the explorer, and nothing outside the workspace', () => {
    const list = [
      '# a comment line',
      'file:///home/me/ws/src/app.py',
      'file:///home/me/ws/docs/my%20notes.md',
      'file:///home/me/other/secret.txt',
      'file:///home/me/ws/../ws2/x',
      'file:///home/me/wsx/y.py',
    ].join('\r\n');
    expect(mentionsFromUris(list, 'file:///home/me/ws')).toEqual(['@src/app.py', '@"docs/my notes.md"']);
    expect(mentionsFromUris('file:///home/me/ws/a.py', 'file:///home/me/ws/')).toEqual(['@a.py']);
  });

  it('takes the image types the models take, within the limits', () => {
    expect(imageProblem('image/png', 1000, 0)).toBeUndefined();
    expect(imageProblem('image/svg+xml', 1000, 0)).toMatch(/PNG, JPEG, GIF or WebP/);
    expect(imageProblem('image/jpeg', 6 * 1024 * 1024, 0)).toMatch(/5 MB/);
    expect(imageProblem('image/png', 10, 10)).toMatch(/At most 10/);
    expect(imageFromDataUrl(`data:image/png;base64,${PNG}`)).toEqual({ type: 'image', mimeType: 'image/png', data: PNG });
    expect(imageFromDataUrl('javascript:alert(1)')).toBeUndefined();
  });

  it('shows only real image data as an image', () => {
    expect(imageSrc({ type: 'image', mimeType: 'image/png', data: PNG })).toBe(`data:image/png;base64,${PNG}`);
    expect(imageSrc({ type: 'image', mimeType: 'text/html', data: PNG })).toBeUndefined();
    expect(imageSrc({ type: 'image', mimeType: 'image/png', data: '"><script>' })).toBeUndefined();
  });
});
