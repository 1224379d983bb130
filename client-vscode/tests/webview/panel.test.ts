/**
 * The panel's review and steering, in headless Chromium: links that open files, colours in
 * command output (and long output at its end), permission cards answered from the keyboard
 * (with words for the agent), typing ahead and Esc to stop, no cursor left on an old answer,
 * retries that shrink once they worked, and pickers that fit a narrow view.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { initialState, reduceAll, type Action, type ViewState } from '../../src/state/reducer';
import { ARTIFACTS, openView, show } from './page';

const S = 's-panel';
let seq = 0;
function update(u: Record<string, unknown>, turnId = 't1'): Action {
  return { type: 'update', params: { sessionId: S, turnId, seq: seq++, update: u } } as unknown as Action;
}

function base(extra: Action[] = []): ViewState {
  return reduceAll(initialState(), [
    { type: 'serverStatus', status: 'running' },
    { type: 'workspace', workspaceUri: 'file:///w' },
    {
      type: 'sessionsListed',
      sessions: [{ sessionId: S, title: 'Check the stockroom tests before the release', model: 'sim-small', createdAt: '2026-03-02T09:00:00Z', updatedAt: '2026-03-02T09:30:00Z', entryCount: 9, firstPrompt: 'Check the stockroom tests before the release', promptCount: 1 }],
    },
    {
      type: 'sessionStarted',
      sessionId: S,
      title: 'Check the stockroom tests before the release',
      model: { id: 'sim-small', name: 'Simulator, 32k window', contextWindow: 32768 },
      mode: 'ask',
      thinking: 'off',
      canThink: true,
      sandbox: { sandboxed: false, network: true },
    },
    ...extra,
  ]);
}

const OUTPUT = [
  ...Array.from({ length: 60 }, (_, i) => `tests/test_${i}.py::test_case \u001b[32mPASSED\u001b[0m`),
  '\u001b[31;1mFAILED\u001b[0m tests/test_storage.py::test_journal - ValueError',
  '\u001b[38;5;208m1 failed\u001b[0m, \u001b[32m60 passed\u001b[0m in 0.42s',
].join('\n');

describe('panel', () => {
  it('opens files from titles, answers and diffs; colours command output and opens it at its end', async () => {
    const { page, errors, posted } = await openView();
    const state = base([
      { type: 'promptSent', text: 'run the tests' },
      update({ kind: 'userMessage', entryId: 'e1', parentId: null, content: [{ type: 'text', text: 'run the tests' }] }),
      update({ kind: 'toolCall', toolCallId: 'r1', title: 'Read src/inventory/storage.py', toolKind: 'read', status: 'pending', rawInput: { path: 'src/inventory/storage.py' }, locations: [{ path: 'src/inventory/storage.py', line: 40 }] }),
      update({ kind: 'toolCallUpdate', toolCallId: 'r1', status: 'completed', content: [{ type: 'content', content: { type: 'text', text: 'def save(): ...' } }] }),
      update({ kind: 'toolCall', toolCallId: 'b1', title: 'Run: pytest -q', toolKind: 'execute', status: 'pending', rawInput: { command: 'pytest -q' } }),
      update({ kind: 'toolCallUpdate', toolCallId: 'b1', status: 'completed', content: [{ type: 'content', content: { type: 'text', text: OUTPUT } }] }),
      update({ kind: 'toolCall', toolCallId: 'w1', title: 'Edit notes/findings.md', toolKind: 'edit', status: 'pending', rawInput: { path: 'notes/findings.md' }, locations: [{ path: 'notes/findings.md' }] }),
      update({
        kind: 'toolCallUpdate',
        toolCallId: 'w1',
        status: 'completed',
        content: [
          { type: 'content', content: { type: 'text', text: 'Edited notes/findings.md' } },
          { type: 'diff', path: 'notes/findings.md', oldText: 'a\n', newText: 'a\nb\n', diff: '--- a/notes/findings.md\n+++ b/notes/findings.md\n@@ -1 +1,2 @@\n a\n+b\n' },
        ],
      }),
      update({ kind: 'messageChunk', messageId: 'm1', content: { type: 'text', text: 'The failure is in `src/inventory/storage.py:88`; see also src/inventory/models.py and `pytest -q`, version `1.2.3`.' } }),
      { type: 'turnEnded', result: { turnId: 't1', stopReason: 'end_turn' } },
    ]);
    await show(page, state);
    await page.waitForSelector('.item.assistant');

    // A click on the title opens the row (issue 47: it opened the file); the small link after
    // the title opens the file without toggling the row.
    const read = page.locator('details.tool').filter({ hasText: 'Read' });
    expect(await read.locator('.tool-title a').count()).toBe(0);
    await read.locator('.tool-title').click();
    expect(await read.evaluate((d) => (d as HTMLDetailsElement).open)).toBe(true);
    await read.locator('summary a.open-file').click();
    expect(await read.evaluate((d) => (d as HTMLDetailsElement).open)).toBe(true);
    await read.locator('.tool-title').click();
    expect(await read.evaluate((d) => (d as HTMLDetailsElement).open)).toBe(false);
    // In the answer: a path in code (with its line) and one in running text; a command and a
    // version are not paths.
    const answer = page.locator('.item.assistant .markdown');
    expect(await answer.locator('a.path-link').allInnerTexts()).toEqual(['src/inventory/storage.py:88', 'src/inventory/models.py']);
    await answer.locator('a.path-link').first().click();
    await answer.locator('a.path-link').nth(1).click();

    // A command's output: colours, not codes; opened at its end, where the summary is.
    const run = page.locator('details.tool').filter({ hasText: 'pytest -q' });
    await run.locator('summary').click();
    const output = run.locator('pre.output');
    expect(await output.innerText()).not.toContain('\\x1b');
    expect(await output.locator('span.ansi-fg-green').first().innerText()).toBe('PASSED');
    const failed = output.locator('span.ansi-fg-red.ansi-bold');
    expect(await failed.innerText()).toBe('FAILED');
    expect(await failed.evaluate((e) => getComputedStyle(e).fontWeight)).toBe('700');
    expect(await output.locator('span', { hasText: '1 failed' }).evaluate((e) => (e as HTMLElement).style.color)).toBe('rgb(255, 135, 0)');
    const atEnd = await output.evaluate((e) => e.scrollHeight > e.clientHeight && e.scrollTop + e.clientHeight >= e.scrollHeight - 2);
    expect(atEnd).toBe(true);
    await run.scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(ARTIFACTS, 'webview-ansi-output.png') });

    // A change already made: the file is a link, and it opens in the editor's diff.
    const edit = page.locator('details.tool').filter({ hasText: 'Edit' });
    await edit.locator('summary').click();
    await edit.locator('.diff-path a.path-link').click();
    await edit.getByRole('button', { name: 'Review in editor' }).click();

    expect((await posted()).slice(1)).toEqual([
      { type: 'open', path: 'src/inventory/storage.py', line: 40 },
      { type: 'open', path: 'src/inventory/storage.py', line: 88 },
      { type: 'open', path: 'src/inventory/models.py' },
      { type: 'open', path: 'notes/findings.md' },
      { type: 'openDiff', itemId: 'tool:w1', index: 1 },
    ]);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('answers a permission card from the keyboard, with words for the agent; reviews a change in the editor', async () => {
    const { page, posted } = await openView();
    const options = [
      { optionId: 'allow_once', name: 'Allow', kind: 'allow_once' },
      { optionId: 'allow_always', name: 'Always allow read (this session)', kind: 'allow_always' },
      { optionId: 'reject_once', name: 'Reject', kind: 'reject_once' },
      { optionId: 'reject_always', name: 'Always reject read (this session)', kind: 'reject_always' },
    ] as const;
    const ask = (requestId: string, toolCall: Record<string, unknown>): Action =>
      ({ type: 'permissionRequested', requestId, params: { sessionId: S, toolCall, options } }) as unknown as Action;
    const running = base([{ type: 'promptSent', text: 'look around' }]);
    await show(page, running, [ask('p1', { toolCallId: 'c1', title: 'Read README.md', toolKind: 'read', rawInput: { path: 'README.md', offset: 1, limit: 40 } })]);
    const card = page.locator('.card.permission.status-pending');
    await card.waitFor();
    // A read in "Ask every time" shows what it reads, not JSON; the card has the focus.
    expect(await card.locator('dl.input-list').innerText()).toMatch(/path\s+README\.md\s+offset\s+1\s+limit\s+40/);
    expect(await card.innerText()).not.toContain('{');
    expect(await card.evaluate((e) => e === document.activeElement)).toBe(true);
    // Issue 47, item 9: the choices are even rows, whatever the length of their words.
    const widths = await card.locator('.card-actions > button:not(.link)').evaluateAll((buttons) =>
      buttons.map((b) => Math.round(b.getBoundingClientRect().width)));
    expect(widths).toHaveLength(4); // the four choices (a read has no review in the editor)
    expect(new Set(widths).size).toBe(1);
    await page.screenshot({ path: join(ARTIFACTS, 'webview-permission-keys.png') });
    await page.keyboard.press('2');
    // Enter allows the next one; Esc opens "what to do instead", and Enter sends it.
    const focused = (id: string) => page.waitForFunction((id) => document.activeElement?.getAttribute('data-id') === `permission:${id}`, id);
    await show(page, running, [ask('p2', { toolCallId: 'c2', title: 'Read setup.py', toolKind: 'read', rawInput: { path: 'setup.py' } })]);
    await focused('p2');
    await page.keyboard.press('Enter');
    await show(page, running, [ask('p3', { toolCallId: 'c3', title: 'Read .env', toolKind: 'read', rawInput: { path: '.env' } })]);
    await focused('p3');
    await page.keyboard.press('Escape');
    const feedback = page.locator('.card.permission.status-pending textarea.feedback');
    expect(await feedback.isVisible()).toBe(true);
    // The note box takes the card's width, its button below it (issue 47: it was about 50 px
    // wide beside its button, a syllable a line).
    const noteBox = await feedback.boundingBox();
    const cardBox = await page.locator('.card.permission.status-pending').boundingBox();
    const tellBox = await page.locator('.card.permission.status-pending button.tell').boundingBox();
    expect(noteBox && cardBox && tellBox).toBeTruthy();
    expect(noteBox!.width).toBeGreaterThan(0.85 * cardBox!.width);
    expect(tellBox!.y).toBeGreaterThanOrEqual(noteBox!.y + noteBox!.height);
    await feedback.fill('Do not read secrets; use .env.example.');
    await page.screenshot({ path: join(ARTIFACTS, 'webview-permission-feedback.png') });
    await feedback.press('Enter');
    // Esc twice: a plain rejection.
    await show(page, running, [ask('p4', { toolCallId: 'c4', title: 'Read id_rsa', toolKind: 'read', rawInput: { path: 'id_rsa' } })]);
    await focused('p4');
    await page.keyboard.press('Escape');
    await page.keyboard.press('Escape');
    // A write: "Review in editor" opens the change in the diff view.
    const long = Array.from({ length: 80 }, (_, n) => `line ${n + 1}`).join('\n') + '\n';
    await show(page, running, [
      ask('p5', {
        toolCallId: 'c5',
        title: 'Write notes/a.md',
        toolKind: 'edit',
        rawInput: { path: 'notes/a.md', content: 'x\n' },
        content: [{ type: 'diff', path: 'notes/a.md', oldText: null, newText: long, diff: `--- /dev/null\n+++ b/notes/a.md\n@@ -0,0 +1,80 @@\n${long.replace(/^/gm, '+')}` }],
      }),
    ]);
    // Issue 47, item 3: the card shows the whole change; the transcript scrolls, not the card.
    await page.locator('.card.permission.status-pending pre.diff-lines').waitFor();
    const inner = await page.locator('.card.permission.status-pending pre').evaluateAll((pres) =>
      pres.map((pre) => pre.scrollHeight - pre.clientHeight));
    expect(inner.length).toBeGreaterThan(0);
    expect(inner.every((hidden) => hidden <= 1)).toBe(true);
    await page.locator('.card.permission.status-pending button.review').click();
    expect((await posted()).slice(1)).toEqual([
      { type: 'permission', requestId: 'p1', optionId: 'allow_always' },
      { type: 'permission', requestId: 'p2', optionId: 'allow_once' },
      { type: 'permission', requestId: 'p3', optionId: 'reject_once', message: 'Do not read secrets; use .env.example.' },
      { type: 'permission', requestId: 'p4', optionId: 'reject_once' },
      { type: 'reviewChange', requestId: 'p5' },
    ]);
    await page.close();
  });

  it('a card leaves the focus in the prompt box the user turned to; it takes it from one who sent and waits', async () => {
    const { page, posted } = await openView();
    const options = [
      { optionId: 'allow_once', name: 'Allow', kind: 'allow_once' },
      { optionId: 'reject_once', name: 'Reject', kind: 'reject_once' },
    ];
    const ask = (requestId: string, title: string): Action =>
      ({ type: 'permissionRequested', requestId, params: { sessionId: S, toolCall: { toolCallId: requestId, title, toolKind: 'execute', rawInput: { command: title } }, options } }) as unknown as Action;
    const running = base([{ type: 'promptSent', text: 'run the tests' }]);
    await show(page, running);
    const input = page.locator('textarea.prompt');
    // The user clicks into the empty box to write the next prompt; a card arrives: the "1"
    // they type starts the prompt, it does not allow the command.
    await input.click();
    await show(page, running, [ask('p1', 'rm -rf build')]);
    await page.locator('.card.permission.status-pending').waitFor();
    await page.keyboard.press('1');
    expect(await input.inputValue()).toBe('1');
    expect(await page.locator('.card.permission.status-pending').count()).toBe(1);
    // The user sends a prompt from the box and waits: the next card takes the focus, and
    // "1" answers it.
    await page.keyboard.type('. then update the notes');
    await page.keyboard.press('Enter');
    expect(await input.inputValue()).toBe('');
    await show(page, running, [ask('p1', 'rm -rf build'), ask('p2', 'pytest -q')]);
    await page.waitForFunction(() => document.activeElement?.getAttribute('data-id') === 'permission:p2');
    await page.keyboard.press('1');
    expect((await posted()).slice(1)).toEqual([
      { type: 'send', text: '1. then update the notes' },
      { type: 'permission', requestId: 'p2', optionId: 'allow_once' },
    ]);
    await page.close();
  });

  it('queues a prompt typed during a turn, stops on Esc, and leaves no cursor on the last answer', async () => {
    const { page, posted } = await openView();
    const state = base([
      { type: 'promptSent', text: 'first' },
      update({ kind: 'userMessage', entryId: 'e1', parentId: null, content: [{ type: 'text', text: 'first' }] }),
      update({ kind: 'messageChunk', messageId: 'm1', content: { type: 'text', text: 'First answer.' } }),
      { type: 'turnEnded', result: { turnId: 't1', stopReason: 'end_turn' } },
      { type: 'promptSent', text: 'second' },
      { type: 'promptQueued', text: 'then run the linter' },
    ]);
    await show(page, state);
    await page.waitForSelector('.queue .queued');
    // The new turn has no answer yet: the old answer has no cursor.
    expect(await page.locator('.item.assistant.streaming').count()).toBe(0);
    expect(await page.locator('.cursor').count()).toBe(0);
    expect(await page.locator('.queued-text').allInnerTexts()).toEqual(['then run the linter']);
    const input = page.locator('textarea.prompt');
    expect(await input.getAttribute('placeholder')).toContain('Enter queues it');
    await input.fill('and update the notes');
    await input.press('Enter');
    expect(await input.inputValue()).toBe('');
    await page.screenshot({ path: join(ARTIFACTS, 'webview-typing-ahead.png') });
    await input.press('Escape');
    await page.locator('.queued .remove-queued').click();
    // Stopped with a prompt still queued: it waits, with "Send now".
    await page.evaluate(() =>
      window.postMessage({ type: 'actions', actions: [{ type: 'stopRequested' }, { type: 'turnEnded', result: { stopReason: 'cancelled' } }] }, '*'),
    );
    await page.locator('.queued .send-queued').click();
    const queuedId = await page.evaluate(() => document.querySelector('.queued') !== null);
    expect(queuedId).toBe(true);
    const sent = (await posted()).slice(1) as { type: string }[];
    expect(sent.map((m) => m.type)).toEqual(['send', 'stop', 'removeQueued', 'sendQueued']);
    expect(sent[0]).toEqual({ type: 'send', text: 'and update the notes' });
    await page.close();
  });

  it('shows a retry as one line that goes quiet once the call went through', async () => {
    seq = 0;
    const { page } = await openView();
    const retry = (attempt: number): Action =>
      update({ kind: 'notice', level: 'warning', message: `The simulator is overloaded (529). Retrying in 1s (attempt ${attempt} of 4).`, retry: { attempt, attempts: 4, wait: 1 } });
    await show(page, base([{ type: 'promptSent', text: 'go' }, retry(2), retry(3)]));
    await page.waitForSelector('.notice.retry');
    expect(await page.locator('.notice.retry').count()).toBe(1);
    expect(await page.locator('.notice.retry').innerText()).toContain('attempt 3 of 4');
    await page.evaluate((u) => window.postMessage({ type: 'actions', actions: [u] }, '*'), update({ kind: 'messageChunk', messageId: 'm1', content: { type: 'text', text: 'Here it is.' } }));
    await page.waitForSelector('.notice.retry.resolved');
    expect(await page.locator('.notice.retry.resolved summary').innerText()).toBe('Retried after a provider error (attempt 3 of 4): it went through.');
    expect(await page.locator('.notice.warning').count()).toBe(0);
    await page.close();
  });

  it('fits its pickers at the default sidebar width: nothing cut', async () => {
    const { page } = await openView({ width: 300, height: 700 });
    await show(page, base());
    await page.waitForSelector('.model-picker');
    for (const picker of ['.session-picker', '.model-picker', '.mode-picker', '.thinking-picker']) {
      const label = page.locator(`${picker} .picker-label`);
      const cut = await label.evaluate((e) => e.scrollWidth > e.clientWidth + 1);
      expect(cut, picker).toBe(false);
    }
    expect(await page.locator('.session-picker').innerText()).toContain('Check the stockroom tests before the release');
    expect(await page.locator('.model-picker').innerText()).toContain('Simulator, 32k window');
    expect(await page.locator('.mode-picker').innerText()).toContain('Ask every time');
    expect(await page.locator('.thinking-picker').innerText()).toContain('Thinking off');
    await page.screenshot({ path: join(ARTIFACTS, 'webview-narrow.png') });
    await page.close();
  });

  it('keeps a long session title to two lines: the transcript keeps the room', async () => {
    // Issue 47, item 3: a first prompt as the title took three lines and more above the transcript.
    const { page } = await openView({ width: 300, height: 700 });
    const title = 'Give me an overview of this repository: what it does, how it is laid out, and what its tests cover';
    await show(page, base([{ type: 'sessionRenamed', sessionId: S, title }]));
    const label = page.locator('.session-picker .picker-label');
    await expect.poll(() => label.innerText()).toContain('Give me an overview'); // the start, as written
    const { height, line } = await label.evaluate((e) => ({
      height: e.getBoundingClientRect().height,
      line: parseFloat(getComputedStyle(e).lineHeight) || parseFloat(getComputedStyle(e).fontSize) * 1.3,
    }));
    expect(height).toBeLessThanOrEqual(2 * line + 2);
    await page.close();
  });

  it('keeps the pins and the plan open or closed as the user left them when they change', async () => {
    const { page } = await openView();
    const pins = [
      { id: 'p1', kind: 'rule', text: 'never edit CHANGELOG', by: 'user' },
      { id: 'p2', kind: 'rule', text: 'run the tests with -q', by: 'user' },
      { id: 'p3', kind: 'fact', text: 'the journal is data/journal.log', by: 'model' },
    ];
    const step = (status: string) => [
      { content: 'reproduce', status, priority: 'high' },
      { content: 'fix', status: 'pending', priority: 'high' },
    ];
    await show(page, base([update({ kind: 'plan', entries: step('in_progress') }), update({ kind: 'pins', pins })]));
    await page.waitForSelector('.memory .pin', { state: 'attached' });
    const open = (cls: string) => page.locator(`.memory details.${cls}`).evaluate((d) => (d as HTMLDetailsElement).open);
    expect(await open('plan')).toBe(true);
    expect(await open('pins')).toBe(false);
    // The user opens the pins to remove two of them, one after the other, and closes the plan.
    await page.locator('.memory .pins summary').click();
    await page.locator('.memory .plan summary').click();
    const send = (actions: Action[]) => page.evaluate((a) => window.postMessage({ type: 'actions', actions: a }, '*'), actions);
    await send([{ type: 'pinsChanged', sessionId: S, pins: pins.slice(1) } as unknown as Action]);
    await page.waitForFunction(() => document.querySelectorAll('.memory .pin:not(.removed)').length === 2);
    expect(await open('pins')).toBe(true);
    await page.locator('.memory .pin-forget').first().click();
    // The model ticks a step off: the plan the user closed stays closed.
    await send([update({ kind: 'plan', entries: step('completed') })]);
    await page.waitForFunction(() => document.querySelector('.memory .plan summary')?.textContent === 'Plan · 1 of 2 done');
    expect(await open('plan')).toBe(false);
    expect(await open('pins')).toBe(true);
    await page.close();
  });

  it('reaches "Rewind here" from the keyboard: it shows when focused, and Enter opens the rewind', async () => {
    const { page, posted } = await openView();
    await show(page, base([
      { type: 'promptSent', text: 'first' },
      update({ kind: 'userMessage', entryId: 'e1', parentId: null, content: [{ type: 'text', text: 'first' }] }),
      update({ kind: 'messageChunk', messageId: 'm1', content: { type: 'text', text: 'First answer.' } }),
      { type: 'turnEnded', result: { turnId: 't1', stopReason: 'end_turn' } },
    ]));
    await page.waitForSelector('.item.assistant');
    await page.locator('textarea.prompt').focus();
    await page.keyboard.press('Shift+Tab');
    const focused = await page.evaluate(() => {
      const el = document.activeElement as HTMLElement;
      const style = getComputedStyle(el);
      return { text: el.textContent, shown: style.visibility === 'visible' && style.opacity === '1' };
    });
    expect(focused).toEqual({ text: '↶ Rewind here', shown: true });
    await page.keyboard.press('Enter');
    expect((await posted()).at(-1)).toEqual({ type: 'rewindPreview', entryId: 'm1' });
    await page.close();
  });

  it('Enter on a file link inside a permission card opens the file; it does not allow the change', async () => {
    const { page, posted } = await openView();
    const options = [
      { optionId: 'allow_once', name: 'Allow', kind: 'allow_once' },
      { optionId: 'reject_once', name: 'Reject', kind: 'reject_once' },
    ];
    const toolCall = {
      toolCallId: 'c1',
      title: 'Write notes/a.md',
      toolKind: 'edit',
      rawInput: { path: 'notes/a.md', content: 'x\n' },
      content: [{ type: 'diff', path: 'notes/a.md', oldText: null, newText: 'x\n', diff: '--- /dev/null\n+++ b/notes/a.md\n@@ -0,0 +1 @@\n+x\n' }],
    };
    await show(page, base([{ type: 'promptSent', text: 'write it' }]), [
      { type: 'permissionRequested', requestId: 'p1', params: { sessionId: S, toolCall, options } } as unknown as Action,
    ]);
    await page.waitForFunction(() => document.activeElement?.getAttribute('data-id') === 'permission:p1');
    // The card has the focus; Tab goes to the file the change writes.
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('notes/a.md');
    await page.keyboard.press('Enter');
    expect((await posted()).slice(1)).toEqual([{ type: 'open', path: 'notes/a.md' }]);
    expect(await page.locator('.card.permission.status-pending').count()).toBe(1);
    await page.close();
  });

  it('shows as much of a tool title as fits, the whole on hover and when the row is open', async () => {
    // Issue 47, item 9: a long command's title came cut at 100 characters by the server, and
    // stayed cut with an ellipsis in an open row and on hover, wherever the row had room.
    const command = 'PYTHONPATH=src python -m pytest tests/test_storage.py tests/test_journal.py tests/test_reports.py -q --maxfail=1 -k "not slow and not network" --durations=5';
    const cut = `Run: ${command.slice(0, 99)}…`;
    const path = 'src/inventory/reports/quarterly/summaries/by_warehouse/north_east_region/2026/march/totals_and_adjustments.py';
    const { page } = await openView({ width: 1400, height: 700 });
    await show(page, base([
      { type: 'promptSent', text: 'run the tests' },
      update({ kind: 'toolCall', toolCallId: 'b1', title: cut, toolKind: 'execute', status: 'completed', rawInput: { command } }),
      update({ kind: 'toolCall', toolCallId: 'r1', title: `Read ${path.slice(0, 99)}…`, toolKind: 'read', status: 'completed', rawInput: { path }, locations: [{ path }] }),
      update({ kind: 'toolCall', toolCallId: 'b2', title: 'Run: echo one …', toolKind: 'execute', status: 'completed', rawInput: { command: 'echo one\necho two' } }),
      { type: 'turnEnded', result: { turnId: 't1', stopReason: 'end_turn' } },
    ]));
    await page.waitForSelector('textarea.prompt:not([disabled])');
    const run = page.locator('details.tool').nth(0);
    const title = run.locator('.tool-title');
    await expect.poll(() => title.count()).toBe(1);
    // Wide: the whole command, nothing cut.
    expect(await title.innerText()).toBe(`Run: ${command}`);
    expect(await title.evaluate((e) => e.scrollWidth <= e.clientWidth + 1)).toBe(true);
    expect(await title.getAttribute('title')).toBe(`Run: ${command}`);
    const read = page.locator('details.tool').nth(1).locator('.tool-title');
    expect(await read.innerText()).toBe(`Read ${path}`);
    expect(await read.locator('.tool-path').innerText()).toBe(path);
    // A command of two lines: its first line, the whole on hover.
    const two = page.locator('details.tool').nth(2).locator('.tool-title');
    expect(await two.innerText()).toBe('Run: echo one …');
    expect(await two.getAttribute('title')).toBe('Run: echo one\necho two');
    // Narrow: as much as fits, up to the status; open, the whole title, wrapped.
    await page.setViewportSize({ width: 300, height: 700 });
    await expect.poll(() => title.evaluate((e) => e.scrollWidth > e.clientWidth)).toBe(true);
    const room = await run.locator('summary').evaluate((s) => {
      const t = s.querySelector('.tool-title')!.getBoundingClientRect();
      const status = s.querySelector('.tool-status')!.getBoundingClientRect();
      return status.left - t.right;
    });
    expect(room).toBeLessThan(12);
    await title.click();
    await expect.poll(() => run.evaluate((d) => (d as HTMLDetailsElement).open)).toBe(true);
    expect(await title.evaluate((e) => e.scrollWidth <= e.clientWidth + 1 && e.scrollHeight <= e.clientHeight + 1)).toBe(true);
    expect(await title.innerText()).toBe(`Run: ${command}`);
    await page.screenshot({ path: join(ARTIFACTS, 'tool-title-open-300.png') });
    await page.close();
  });

  it('asks about a long command by its whole first line, not the title the server cut', async () => {
    const command = 'PYTHONPATH=src python -m pytest tests/test_storage.py tests/test_journal.py tests/test_reports.py -q --maxfail=1 -k "not slow and not network" --durations=5\necho done';
    const first = command.split('\n')[0]!;
    const { page } = await openView({ width: 300, height: 900 });
    const toolCall = { toolCallId: 'c9', title: `Run: ${first.slice(0, 99)}…`, toolKind: 'execute', rawInput: { command } };
    const options = [{ optionId: 'allow_once', name: 'Allow', kind: 'allow_once' }, { optionId: 'reject_once', name: 'Reject', kind: 'reject_once' }];
    await show(page, base([{ type: 'promptSent', text: 'run the tests' }]), [
      { type: 'permissionRequested', requestId: 'p9', params: { sessionId: S, toolCall, options } } as unknown as Action,
    ]);
    const title = page.locator('.card.permission.status-pending .card-title');
    await title.waitFor();
    expect(await title.innerText()).toContain(`Allow Run: ${first} …?`);
    expect(await title.getAttribute('title')).toBe(`Allow Run: ${command}?`);
    await page.close();
  });
});
