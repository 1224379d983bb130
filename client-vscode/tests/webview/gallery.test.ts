/**
 * Issue 47's fixes and features at the sidebar's default width (289 px inside the view in
 * VS Code) and a narrow one (240 px): each is rendered, checked to stay inside the view (no
 * sideways scroll of the page, no control past its right edge), and left as a screenshot in
 * artifacts/gallery-<what>-<width>.png. The real VS Code e2e shows the layout at both widths;
 * this shows every fix and feature at both.
 */
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { initialState, reduceAll, type Action, type ViewState } from '../../src/state/reducer';
import { ARTIFACTS, openView, show } from './page';

const S = 's-gallery';
const WIDTHS = [289, 240] as const;
let seq = 0;
function update(u: Record<string, unknown>): Action {
  return { type: 'update', params: { sessionId: S, turnId: 't1', seq: seq++, update: u } } as unknown as Action;
}

const COMMAND = 'PYTHONPATH=src python -m pytest tests/test_storage.py tests/test_journal.py -q --maxfail=1 -k "not slow and not network"';
const OPTIONS = [
  { optionId: 'allow_once', name: 'Allow', kind: 'allow_once' },
  { optionId: 'allow_always', name: 'Always allow this command (this session)', kind: 'allow_always' },
  { optionId: 'reject_once', name: 'Reject', kind: 'reject_once' },
];
const ask = (requestId: string, toolCallId: string, command: string): Action =>
  ({
    type: 'permissionRequested',
    requestId,
    params: { sessionId: S, toolCall: { toolCallId, title: `Run: ${command}`, toolKind: 'execute', rawInput: { command } }, options: OPTIONS },
  }) as unknown as Action;

/** A session part-way: a long command answered (its card folded under its row), a model
 * switched with its cost, files restored by a rewind, a plan, pins and a removed pin. */
function session(): ViewState {
  return reduceAll(initialState(), [
    { type: 'serverStatus', status: 'running' },
    { type: 'workspace', workspaceUri: 'file:///w' },
    {
      type: 'sessionStarted',
      sessionId: S,
      title: 'Make the journal parser skip blank lines and report the line of a bad row',
      model: { id: 'claude-sonnet-5-5', name: 'Claude Sonnet 5.5', contextWindow: 200000 },
      mode: 'ask',
      thinking: 'medium',
      canThink: true,
      sandbox: { sandboxed: true, network: false },
    },
    { type: 'promptSent', text: 'Run the journal tests, then fix what fails.' },
    update({ kind: 'toolCall', toolCallId: 'c1', title: `Run: ${COMMAND.slice(0, 99)}…`, toolKind: 'execute', status: 'pending', rawInput: { command: COMMAND } }),
    ask('p1', 'c1', COMMAND),
    { type: 'permissionResolved', requestId: 'p1', outcome: { selected: 'allow_always' } },
    update({ kind: 'toolCallUpdate', toolCallId: 'c1', status: 'completed', content: [{ type: 'content', content: { type: 'text', text: '1 failed, 41 passed in 0.52s' } }] }),
    update({ kind: 'messageChunk', messageId: 'm1', content: { type: 'text', text: 'One test fails: `test_blank_line` in tests/test_journal.py.' } }),
    {
      type: 'modelChanged',
      sessionId: S,
      result: {
        model: { id: 'claude-haiku', name: 'Claude Haiku', contextWindow: 200000 },
        entryId: 'e3',
        cost: { tokens: 14200, switchedCost: 0.0142, stayedCost: 0.0043, compacts: false, compactAt: 150000, window: 200000 },
        note: 'Switching re-reads 14,200 tokens uncached: $0.0142 instead of $0.0043 for the next request; later ones are cached again.',
      },
    } as unknown as Action,
    update({ kind: 'plan', entries: [
      { content: 'reproduce with a blank line', status: 'completed', priority: 'high' },
      { content: 'skip blank lines in parse_journal', status: 'in_progress', priority: 'high' },
      { content: 'name the line of a bad row in the error', status: 'pending', priority: 'medium' },
    ] }),
    update({ kind: 'pins', pins: [
      { id: 'p1', kind: 'rule', text: 'never edit CHANGELOG', by: 'user' },
      { id: 'p2', kind: 'rule', text: 'run the tests with -q', by: 'user' },
    ] }),
    update({ kind: 'pins', pins: [{ id: 'p1', kind: 'rule', text: 'never edit CHANGELOG', by: 'user' }] }),
    { type: 'turnEnded', result: { turnId: 't1', stopReason: 'end_turn' } },
  ]);
}

/** Nothing sticks out of the view: the page does not scroll sideways, and no control (a
 * button, a field, a title, a list) ends past the view's right edge. */
async function inside(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const out: string[] = [];
    if (document.documentElement.scrollWidth > width + 1) out.push(`the page scrolls sideways: ${document.documentElement.scrollWidth} > ${width}`);
    for (const el of document.querySelectorAll<HTMLElement>('button, select, textarea, input, summary, .card-title, .tool-title, li, .marker, .notice')) {
      const box = el.getBoundingClientRect();
      if (box.width === 0 || el.closest('[hidden]')) continue;
      if (box.right > width + 1) out.push(`${el.tagName.toLowerCase()}.${el.className}: right edge ${Math.round(box.right)} > ${width}`);
    }
    return out;
  });
}

async function shoot(page: Page, what: string, width: number): Promise<void> {
  expect(await inside(page), `${what} at ${width} px`).toEqual([]);
  await page.screenshot({ path: join(ARTIFACTS, `gallery-${what}-${width}.png`) });
}

describe('issue 47 at the default width and a narrow one', () => {
  for (const width of WIDTHS) {
    it(`shows each fix and feature inside a ${width} px view`, async () => {
      const { page, errors } = await openView({ width, height: 900 });
      await show(page, session());
      await page.waitForSelector('textarea.prompt:not([disabled])');
      // Items 4, 6 and 9: the answered card folded under its row, the switch's cost short and
      // from the left, the tool title as long as fits; the plan and the pins, a removed pin
      // with its undo.
      await page.locator('details.tool .tool-title').first().waitFor();
      await expect.poll(() => page.locator('.memory .pin.removed').count()).toBe(1);
      await page.locator('.memory .pins summary').click();
      await expect.poll(() => page.locator('.memory .pin.removed').isVisible()).toBe(true);
      await shoot(page, 'transcript', width);

      // Item 1: a command asked about, its note box (Esc) the card's width, the button below.
      const second = 'rm -rf build/ dist/ && python -m build --sdist --wheel --outdir dist/ .';
      await show(page, session(), [
        update({ kind: 'toolCall', toolCallId: 'c2', title: `Run: ${second}`, toolKind: 'execute', status: 'pending', rawInput: { command: second } }),
        ask('p2', 'c2', second),
      ]);
      const card = page.locator('.card.permission.status-pending');
      await card.waitFor();
      await page.waitForFunction(() => document.activeElement?.getAttribute('data-id') === 'permission:p2');
      await page.keyboard.press('Escape');
      const note = card.locator('textarea.feedback');
      await note.waitFor();
      await note.fill('Keep dist/: the release job reads it. Build into /tmp instead.');
      const [noteBox, cardBox] = [await note.boundingBox(), await card.boundingBox()];
      expect(noteBox!.width).toBeGreaterThan(0.8 * cardBox!.width);
      await shoot(page, 'reject-and-tell', width);

      // The rewind panel, with the files it puts back and "Show the changes".
      await show(page, session(), [
        { type: 'rewindRequested', entryId: 'e1' },
        {
          type: 'rewindPreviewed',
          preview: {
            entryId: 'e1',
            files: [
              { path: 'src/inventory/journal.py', action: 'restore', changedSince: true },
              { path: 'tests/test_journal_blank_lines.py', action: 'delete', changedSince: false },
            ],
            notRestorable: { commands: [COMMAND], files: ['data/journal.jsonl'], moreFiles: 3 },
          },
        } as unknown as Action,
      ]);
      await page.waitForSelector('.rewind-panel .rewind-changes');
      await shoot(page, 'rewind', width);

      // The `/` menu over the prompt box.
      await show(page, session());
      await page.waitForSelector('textarea.prompt:not([disabled])');
      const input = page.locator('textarea.prompt');
      await input.click();
      await input.pressSequentially('/');
      await expect.poll(() => input.inputValue()).toBe('/');
      await page.evaluate(() => window.postMessage({ type: 'actions', actions: [{ type: 'commandsListed', commands: [
        { name: 'review', description: 'Review the staged changes against the project rules and say what to fix', hint: '[file]', origin: 'workspace' },
        { name: 'release-notes', description: 'Draft the release notes from the commits since the last tag', hint: '', origin: 'user' },
      ] }] }, '*'));
      await expect.poll(() => page.locator('.mentions .mention').count()).toBeGreaterThan(1);
      await shoot(page, 'slash-menu', width);
      expect(errors).toEqual([]);
      await page.close();
    });
  }
});
