import { afterEach, describe, expect, it } from 'vitest';
import { SessionController } from '../../src/controller';
import { AgentClient } from '../../src/protocol/client';
import type { ModelChoice, SessionSummary } from '../../src/protocol/types';
import { deleteSession, pickMode, pickModel, pickSession, pickThinking, renameSession } from '../../src/view/pickers';
import { drawnLabel } from '../support/iconLabel';
import { connectionPair } from '../support/pipe';
import { answers, shownInputBoxes, shownNotices, shownQuickPicks } from '../support/vscode-stub';

let pair: ReturnType<typeof connectionPair> | undefined;
afterEach(() => {
  pair?.dispose();
  pair = undefined;
  shownQuickPicks.length = 0;
  shownInputBoxes.length = 0;
  shownNotices.length = 0;
  answers.quickPick.length = 0;
  answers.inputBox.length = 0;
  answers.message.length = 0;
});

/** A controller on a real wire whose server answers `agent/session/list` and `agent/model/list`. */
function setup(sessions: SessionSummary[], models: ModelChoice[]): SessionController {
  pair?.dispose();
  pair = connectionPair();
  pair.server.onRequest('agent/session/list', () => ({ sessions }));
  pair.server.onRequest('agent/model/list', () => ({ provider: 'anthropic', current: models[0]?.id, models }));
  const controller = new SessionController({
    publish: () => undefined,
    onConfigurationError: () => undefined,
    trace: () => undefined,
    memory: { get: () => undefined, update: () => undefined },
  });
  controller.attach(new AgentClient(pair.client));
  controller.dispatch({ type: 'serverStatus', status: 'running' });
  controller.setWorkspace('file:///w');
  return controller;
}

function session(sessionId: string, title: string | null, firstPrompt: string | null): SessionSummary {
  return { sessionId, title, model: null, createdAt: '2026-01-02T03:04:05Z', updatedAt: '2026-01-02T03:04:05Z', entryCount: 2, firstPrompt, promptCount: 1 };
}

function model(id: string, name: string, vendor: string): ModelChoice {
  const pricing = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };
  return { id, name, contextWindow: 200_000, vendor, maxOutput: 64_000, pricing, images: true, thinking: true, source: 'user', current: false };
}

/** Every label, description and detail of the last quick pick, as VS Code draws them. */
function drawnItems(): { label: string; description?: string; detail?: string }[] {
  const shown = shownQuickPicks.at(-1);
  if (!shown) throw new Error('no quick pick was shown');
  return shown.items.map((item) => ({
    label: drawnLabel(item.label),
    description: item.description === undefined ? undefined : drawnLabel(item.description),
    detail: item.detail === undefined ? undefined : drawnLabel(item.detail),
  }));
}

describe('the session picker', () => {
  it('shows titles and first prompts from the model as text, never as icons or links', async () => {
    const title = '$(check) Approved: $(terminal) run it';
    const controller = setup(
      [
        session('aaaaaaaa-1', title, 'Do [this](command:workbench.action.terminal.new) $(alert)\nthen that'),
        session('bbbbbbbb-2', '$(sync~spin) second', null),
      ],
      [],
    );
    controller.dispatch({ type: 'sessionStarted', sessionId: 'bbbbbbbb-2' });
    await pickSession(controller);
    const [current, fresh, first] = drawnItems();
    expect(fresh!.label).toBe('<icon:add> New session');
    expect(first!.label).toBe(title);
    expect(first!.detail!.replace(/\u2060/g, '')).toBe('First prompt: Do [this](command:workbench.action.terminal.new) $(alert)\\nthen that');
    expect(first!.detail).not.toContain('](');
    expect(current!.label).toBe('<icon:check> $(sync~spin) second'); // the picker's own mark only
  });

  it('offers first (what Enter takes) the open session, else the newest, never a new one', async () => {
    const sessions = [session('cccccccc-3', 'newest', null), session('bbbbbbbb-2', 'open', null), session('aaaaaaaa-1', 'oldest', null)];
    const controller = setup(sessions, []);
    await pickSession(controller);
    expect(drawnItems().map((i) => i.label)).toEqual(['newest', '<icon:add> New session', 'open', 'oldest']);
    controller.dispatch({ type: 'sessionStarted', sessionId: 'bbbbbbbb-2' });
    await pickSession(controller);
    expect(drawnItems().map((i) => i.label)).toEqual(['<icon:check> open', '<icon:add> New session', 'newest', 'oldest']);
    const none = setup([], []);
    await pickSession(none);
    expect(drawnItems().map((i) => i.label)).toEqual(['<icon:add> New session']);
  });
});

describe('every picker', () => {
  it('says each choice in at most 80 characters, which VS Code shows whole (issue 47)', async () => {
    const controller = setup([session('aaaaaaaa-1', 'one', 'first')], [model('m-1', 'Model one', 'Vendor')]);
    await pickSession(controller);
    await pickModel(controller);
    await pickMode(controller);
    await pickThinking(controller);
    const said = shownQuickPicks.flatMap((shown) => [
      ...shown.items.flatMap((item) => [item.description ?? '', item.detail ?? '']),
      String((shown.options as { placeHolder?: string } | undefined)?.placeHolder ?? ''),
    ]);
    expect(said.filter((text) => text.length > 80)).toEqual([]);
  });
});

describe('the model picker', () => {
  it('shows a model\u2019s name, vendor and id from the models file as text', async () => {
    const controller = setup([], [model('$(x)-1', '$(verified) Best model', '$(github) Vendor')]);
    await pickModel(controller);
    const [only] = drawnItems();
    expect(only!.label).toBe('<icon:check> $(verified) Best model');
    expect(only!.detail).toContain('$(github) Vendor $(x)-1 (yours)');
    expect(only!.detail).not.toContain('<icon:');
  });
});

describe('renaming and deleting a session', () => {
  /** The controller, and the requests its server got (method, params), the list answering
   * what is left. */
  function managed(sessions: SessionSummary[]): { controller: SessionController; got: [string, unknown][] } {
    const controller = setup(sessions, []);
    const got: [string, unknown][] = [];
    let listed = [...sessions];
    pair!.server.onRequest('agent/session/list', () => ({ sessions: listed }));
    pair!.server.onRequest('agent/session/rename', (params: { sessionId: string; title: string }) => {
      got.push(['rename', params]);
      return { sessionId: params.sessionId, title: params.title.split(/\s+/).filter(Boolean).join(' ') };
    });
    pair!.server.onRequest('agent/session/delete', (params: { sessionId: string }) => {
      got.push(['delete', params]);
      listed = listed.filter((s) => s.sessionId !== params.sessionId);
      return {};
    });
    return { controller, got };
  }
  const pickTitled = (title: string) => (items: readonly { label: string }[]) => items.find((i) => i.label.endsWith(title));

  it('renames the session picked (the open one offered first) with the title typed, as the server keeps it', async () => {
    const { controller, got } = managed([session('aaaaaaaa-1', 'old', null), session('bbbbbbbb-2', 'open one', null)]);
    controller.dispatch({ type: 'sessionStarted', sessionId: 'bbbbbbbb-2', title: 'open one' });
    answers.quickPick.push(pickTitled('open one'));
    answers.inputBox.push('  Fix the\n parser ');
    await renameSession(controller);
    expect(drawnItems().map((i) => i.label)).toEqual(['<icon:check> open one', 'old']);
    expect(shownInputBoxes[0]).toMatchObject({ value: 'open one' });
    expect(got).toEqual([['rename', { sessionId: 'bbbbbbbb-2', title: '  Fix the\n parser ' }]]);
    expect(controller.state.title).toBe('Fix the parser');
    expect(controller.state.sessions.find((s) => s.sessionId === 'bbbbbbbb-2')?.title).toBe('Fix the parser');
  });

  it('renames nothing when the user escapes the picker or the title', async () => {
    const { controller, got } = managed([session('aaaaaaaa-1', 'old', null)]);
    await renameSession(controller); // Escape on the picker
    answers.quickPick.push(pickTitled('old'));
    await renameSession(controller); // Escape on the title
    expect(shownQuickPicks).toHaveLength(2);
    expect(got).toEqual([]);
  });

  it('deletes only once the user confirms, and lets the open session go', async () => {
    const { controller, got } = managed([session('aaaaaaaa-1', 'kept', null), session('bbbbbbbb-2', 'doomed', null)]);
    controller.dispatch({ type: 'sessionStarted', sessionId: 'bbbbbbbb-2', title: 'doomed' });
    answers.quickPick.push(pickTitled('doomed'));
    await deleteSession(controller); // the confirmation escaped
    expect(shownNotices.at(-1)).toMatchObject({ kind: 'warning', text: 'Delete the session "doomed"?', actions: ['Delete'], options: { modal: true } });
    expect(got).toEqual([]);
    answers.quickPick.push(pickTitled('doomed'));
    answers.message.push('Delete');
    await deleteSession(controller);
    expect(got).toEqual([['delete', { sessionId: 'bbbbbbbb-2' }]]);
    expect(controller.state.sessionId).toBeUndefined();
    expect(controller.state.sessions.map((s) => s.sessionId)).toEqual(['aaaaaaaa-1']);
  });
});
