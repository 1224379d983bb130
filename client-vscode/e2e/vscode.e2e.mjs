#!/usr/bin/env node
// End to end in a real VS Code (code-server, driven by headless Chromium): install the built
// .vsix, open a temp copy of the simulator's sample repository with agentServer.python set to
// the repository's .venv and provider "sim", open the Agent view, send a prompt, check the
// streamed answer, a tool call, the context meter and the status bar; then run the scenario's
// turns on the small-window model (sim-small) until a compaction marker shows; then a write
// and an edit whose permission cards show diffs, with one command rejected (its tool says
// why); a rewind to before the edit that restores the note on disk; the mode switch, the model
// picker, an @-mention picked from the completions with a pasted image; then Reload Window (the session comes back, the prompt box stays empty); then an API
// key through secret storage. Screenshots of each stage go to
// client-vscode/artifacts/vscode-e2e/ (CI keeps that folder).
//
//   npm run package && node e2e/vscode.e2e.mjs        (or `make e2e-vscode` at the root)
//
// Environment: VSIX (default dist/agent-server.vsix), AGENT_SERVER_PYTHON (default
// ../.venv/bin/python), CHROMIUM_PATH (default /usr/bin/chromium), E2E_MAX_TURNS (default 18).
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const CLIENT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const REPO = resolve(CLIENT, '..');
const VSIX = resolve(process.env.VSIX ?? join(CLIENT, 'dist', 'agent-server.vsix'));
const PYTHON = resolve(process.env.AGENT_SERVER_PYTHON ?? join(REPO, '.venv', 'bin', 'python'));
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SETUP = resolve(process.env.VSCODE_E2E_SETUP ?? join(CLIENT, 'e2e', 'setup-code-server.sh'));
const SCENARIO = join(REPO, 'agent_server', 'sim', 'scenarios', 'default.yaml');
const ARTIFACTS = join(CLIENT, 'artifacts', 'vscode-e2e');
const MAX_TURNS = Number(process.env.E2E_MAX_TURNS ?? 18);
const KEEP = process.env.E2E_KEEP === '1';
/** A 16×16 PNG (a pasted screenshot stands in for it). */
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAAAFklEQVR4nGM4EaBBEmIY1TCqYfhqAAC/xkAQB0UFtwAAAABJRU5ErkJggg==';

const started = Date.now();
function log(message) {
  console.log(`[e2e ${((Date.now() - started) / 1000).toFixed(1)}s] ${message}`);
}
function fail(message) {
  throw new Error(message);
}

let codeServer;
let browser;
let tmp;
let stage = 0;

async function main() {
  if (!existsSync(VSIX)) fail(`${VSIX} not found: run \`npm run package\` first`);
  if (!existsSync(PYTHON)) fail(`${PYTHON} not found: run \`make\` at the repository root first`);
  const imported = spawnSync(PYTHON, ['-c', 'import agent_server.lsp.server'], { encoding: 'utf8' });
  if (imported.status !== 0) fail(`the server does not import in ${PYTHON}:\n${imported.stderr}`);
  rmSync(ARTIFACTS, { recursive: true, force: true });
  mkdirSync(ARTIFACTS, { recursive: true });

  // code-server and the Node 24 it needs.
  log('setting up code-server (first run takes minutes)…');
  const setup = execFileSync('bash', [SETUP], { encoding: 'utf8' });
  const pathLine = /export PATH="([^"]+)"/.exec(setup);
  if (!pathLine) fail(`unexpected output from ${SETUP}: ${setup}`);
  const env = { ...process.env, PATH: pathLine[1].replace('$PATH', process.env.PATH ?? '') };
  delete env.ANTHROPIC_API_KEY;
  delete env.OPENAI_API_KEY;

  tmp = mkdtempSync(join(tmpdir(), 'agent-vscode-e2e-'));
  const ext = join(tmp, 'ext');
  const data = join(tmp, 'data');
  const workspace = join(tmp, 'stockroom');
  mkdirSync(join(data, 'User'), { recursive: true });
  execFileSync(PYTHON, [
    '-c',
    'import sys, pathlib; from agent_server.sim.workspace import write_sample_workspace; write_sample_workspace(pathlib.Path(sys.argv[1]))',
    workspace,
  ]);
  // First a Python without agent-server (if there is one), to see the install advice; the
  // settings then switch to the repository's .venv, which restarts the server.
  const bare = ['/usr/bin/python3', '/usr/local/bin/python3'].find(
    (py) => existsSync(py) && spawnSync(py, ['-c', 'import agent_server'], { cwd: tmp }).status === 1,
  );
  const settingsFile = join(data, 'User', 'settings.json');
  const writeSettings = (python) =>
    writeFileSync(
      settingsFile,
      JSON.stringify(
        {
          'security.workspace.trust.enabled': false,
          'workbench.startupEditor': 'none',
          'workbench.tips.enabled': false,
          'telemetry.telemetryLevel': 'off',
          'extensions.ignoreRecommendations': true,
          'chat.disableAIFeatures': true,
          'agentServer.python': python,
          'agentServer.provider': 'sim',
          'agentServer.sessionsDir': join(tmp, 'sessions'),
        },
        null,
        2,
      ),
    );
  writeSettings(bare ?? PYTHON);
  const config = join(tmp, 'code-server.yaml');
  writeFileSync(config, 'auth: none\ncert: false\n');
  const common = ['--config', config, '--extensions-dir', ext, '--user-data-dir', data];

  log(`installing ${VSIX}`);
  const install = spawnSync('code-server', [...common, '--install-extension', VSIX], { env, encoding: 'utf8' });
  if (install.status !== 0 || !/successfully installed/i.test(install.stdout + install.stderr)) {
    fail(`installing the extension failed:\n${install.stdout}\n${install.stderr}`);
  }

  const port = await freePort();
  log(`starting code-server on 127.0.0.1:${port}`);
  codeServer = spawn(
    'code-server',
    [...common, '--auth', 'none', '--bind-addr', `127.0.0.1:${port}`, '--disable-telemetry', '--disable-update-check', '--disable-workspace-trust', workspace],
    { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let serverLog = '';
  codeServer.stdout.on('data', (d) => (serverLog += d));
  codeServer.stderr.on('data', (d) => (serverLog += d));
  await waitForHttp(`http://127.0.0.1:${port}/healthz`, 60_000).catch((e) => fail(`${e.message}\n${serverLog}`));

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'],
  });
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
  await page.waitForSelector('.monaco-workbench', { timeout: 60_000 });
  await page.waitForTimeout(8000);
  await shot(page, 'workbench');

  // The Agent view, from its activity-bar container.
  log('opening the Agent view');
  await page.locator('.activitybar [aria-label*="Agent"]').first().click();
  let view = await findFrame(page, 'textarea.prompt', 60_000);
  await view.waitForSelector('.toolbar');
  if (bare) {
    log(`agentServer.python = ${bare} (no agent-server there): expecting the install advice`);
    const banner = view.locator('.banner.error .banner-text');
    await banner.waitFor({ timeout: 60_000 });
    const advice = await banner.innerText();
    if (!advice.includes('pip install agent-server') || !advice.includes(bare)) fail(`unexpected advice: ${advice}`);
    await shot(page, 'server-missing');
    log(`advice shown: ${advice}`);
    // Fix it the way a user would, in the Settings editor; the change restarts the server.
    log(`setting agentServer.python = ${PYTHON} in the Settings editor`);
    await setSettingInEditor(page, 'agentServer.python', PYTHON);
    await shot(page, 'settings-fixed');
    await runCommand(page, 'Notifications: Clear All Notifications');
  }
  // The server starts when the view opens: wait until the input is enabled.
  await waitUntil(async () => !(await view.locator('textarea.prompt').isDisabled()), 60_000, async () => {
    const banner = await view.locator('.banner').innerText().catch(() => '');
    return `the server did not start; the view says: ${banner}`;
  });
  await shot(page, 'view-open');

  // Turn 1: streamed answer, a tool call, the meter.
  const prompts = scenarioPrompts();
  log(`turn 1: ${prompts[0]}`);
  await send(view, prompts[0]);
  await view.locator('.item.assistant .markdown').first().waitFor({ timeout: 60_000 });
  await view.locator('details.tool').first().waitFor({ timeout: 60_000 });
  await waitIdle(view);
  const answer = await view.locator('.item.assistant').last().innerText();
  if (!/stockroom/i.test(answer)) fail(`unexpected answer to turn 1: ${answer}`);
  const tools = await view.locator('details.tool').count();
  const meterText = await view.locator('.meter-text').innerText();
  if (!/\d+(\.\d+)?k? \/ 32\.8k \(\d+%\)/.test(meterText)) fail(`the meter does not show usage: ${meterText}`);
  const status = await page.locator('.statusbar-item', { hasText: '% ctx' }).first().innerText().catch(() => '');
  if (!/% ctx/.test(status)) fail('the status-bar context meter did not show');
  log(`turn 1 done: ${tools} tool call(s); meter "${meterText}"; status bar "${status.trim()}"`);
  await shot(page, 'turn-1');

  // More turns on sim-small (32k) until the history is compacted.
  let compacted = false;
  for (let i = 1; i < Math.min(prompts.length, MAX_TURNS) && !compacted; i++) {
    log(`turn ${i + 1}: ${prompts[i]}`);
    await send(view, prompts[i]);
    await waitIdle(view);
    const meter = await view.locator('.meter-text').innerText();
    compacted = (await view.locator('.marker.compaction.status-completed').count()) > 0;
    log(`turn ${i + 1} done; meter "${meter}"${compacted ? '; compacted' : ''}`);
    await shot(page, `turn-${i + 1}`);
  }
  if (!compacted) fail(`no compaction marker after ${MAX_TURNS} turns`);
  const marker = view.locator('.marker.compaction.status-completed').first();
  const markerText = await marker.locator('.marker-line').innerText();
  await marker.scrollIntoViewIfNeeded();
  const summary = marker.locator('details.summary');
  if ((await summary.count()) > 0) await summary.locator('summary').click();
  const window = await view.locator('.meter-window').innerText();
  if (window !== 'window 2' && window !== 'window 3') fail(`the meter did not move to a new cache window: ${window}`);
  await shot(page, 'compaction');
  log(`compaction marker: "${markerText}"; meter ${window}`);

  // A write and an edit: their cards show the diff (a new file's content), not JSON. The
  // first command of the write turn is rejected: its tool says "rejected" and why.
  const writeTurn = prompts.findIndex((p) => p.startsWith('Write a scratch note'));
  const editTurn = prompts.findIndex((p) => p.startsWith('Add a fourth finding'));
  if (writeTurn < 0 || editTurn < 0) fail('the scenario has no write and edit turns');
  let rejected = false;
  const seen = { write: false, edit: false };
  const policy = async (card, title) => {
    if (!rejected && title.includes('Run:')) {
      rejected = true;
      const command = (await card.locator('pre.command').innerText()).trim();
      if (!command || !title.includes(command.split(' ')[0])) fail(`the card does not show the whole command: ${title} / ${command}`);
      return 'button.option-reject_once';
    }
    if (title.includes('Write') || title.includes('Edit')) {
      const kind = title.includes('Write') ? 'write' : 'edit';
      const changed = await card.locator('.diff .line.add, .diff .line.del').count();
      if (changed === 0) fail(`the ${kind} card shows no diff: ${await card.innerText()}`);
      if ((await card.innerText()).includes('"newText"') || (await card.innerText()).includes('"content"')) fail(`the ${kind} card shows raw JSON`);
      if (kind === 'edit' && (await card.locator('.diff .line.ctx').count()) === 0) fail('the edit card shows no context lines');
      if (!seen[kind]) {
        seen[kind] = true;
        await card.scrollIntoViewIfNeeded();
        await shot(page, `${kind}-approval-diff`);
      }
    }
    return 'button.option-allow_once';
  };
  const note = join(workspace, 'notes', 'findings.md');
  let afterWrite = '';
  for (const index of [writeTurn, editTurn]) {
    log(`turn: ${prompts[index]}`);
    await send(view, prompts[index]);
    await waitIdle(view, 180_000, policy);
    if (index === writeTurn) afterWrite = readFileSync(note, 'utf8');
  }
  if (!afterWrite || readFileSync(note, 'utf8') === afterWrite) fail('the edit turn did not change notes/findings.md');
  const writeTitles = await toolTitlesOfTurn(view, prompts[writeTurn]);
  if (!rejected || !seen.write || !seen.edit) fail(`expected a rejected command and write and edit cards: ${JSON.stringify({ rejected, ...seen })}`);
  const rejectedTool = view.locator('details.tool.status-rejected').first();
  await rejectedTool.waitFor({ timeout: 30_000 });
  await rejectedTool.locator('summary').click();
  const denial = await rejectedTool.locator('.denial').innerText();
  if (!/Not run: the user rejected bash/.test(denial)) fail(`the rejected tool does not say why: ${denial}`);
  await rejectedTool.scrollIntoViewIfNeeded();
  await shot(page, 'rejected-tool');
  const edited = view.locator('details.tool', { hasText: 'Edit notes/' }).last();
  await edited.locator('summary').click();
  if ((await edited.locator('.diff .line.add, .diff .line.del').count()) === 0) fail('the edit result shows no diff');
  await edited.scrollIntoViewIfNeeded();
  await shot(page, 'edit-result-diff');
  log(`rejected: ${denial}; write and edit cards and the edit result showed diffs`);

  // A checkpoint: rewind to before the edit prompt, conversation and files. The panel lists
  // the note (to restore) and the command run since (not restorable); the note goes back on
  // disk to what the write turn left, and the edit prompt comes back into the input box.
  log('rewind to before the edit prompt, conversation and files');
  const editItem = view.locator('.item.user', { hasText: prompts[editTurn] }).last();
  await editItem.scrollIntoViewIfNeeded();
  await editItem.hover();
  await editItem.getByRole('button', { name: /Ask again from here/ }).click();
  await view.locator('.rewind-panel .rewind-go').waitFor({ timeout: 30_000 });
  const plan = await view.locator('.rewind-panel').innerText();
  if (!plan.includes('notes/findings.md — restore')) fail(`the rewind panel does not list the note: ${plan}`);
  if (!plan.includes('$ wc -l notes/findings.md')) fail(`the rewind panel does not list the command as not restorable: ${plan}`);
  await view.getByLabel('Conversation and files').check();
  await shot(page, 'rewind-preview');
  await view.locator('.rewind-panel .rewind-go').click();
  await waitUntil(async () => readFileSync(note, 'utf8') === afterWrite, 30_000, async () => `the note was not restored: ${readFileSync(note, 'utf8')}`);
  const input = view.locator('textarea.prompt');
  await waitUntil(async () => (await input.inputValue()) === prompts[editTurn], 30_000, async () => `the rewound prompt is not in the box: "${await input.inputValue()}"`);
  await view.locator('.marker.file-restore').waitFor({ timeout: 30_000 });
  await shot(page, 'rewind-restored');
  log('restored: the note is as the write turn left it, the edit prompt is back in the box');
  await input.fill('');

  // The mode switch and the model picker: "Allow all", then sim-large (a marker says what the
  // switch costs; the meter shows the new window).
  const sandboxBefore = await view.locator('.sandbox-state').innerText();
  if (sandboxBefore !== 'No sandbox') fail(`under "Allow reads" the view says: ${sandboxBefore}`);
  await view.locator('.mode-select').selectOption('allowAll');
  // tools.sandbox "auto": commands are sandboxed once nothing asks (or the view says why not).
  await waitUntil(async () => (await view.locator('.sandbox-state').innerText()) !== sandboxBefore, 30_000, async () => 'the sandbox state did not follow the mode');
  const sandboxAfter = `${await view.locator('.sandbox-state').innerText()} (${await view.locator('.sandbox-state').getAttribute('title')})`;
  await view.locator('.model-select').focus();
  await waitUntil(async () => (await view.locator('.model-select option[value="sim-large"]').count()) > 0, 30_000, async () => 'the picker does not offer sim-large');
  const offered = await view.locator('.model-select option').allInnerTexts();
  const markers = view.locator('.marker.model-change', { hasText: 'Model: sim-large' });
  await view.locator('.model-select').selectOption('sim-large');
  await waitUntil(async () => (await markers.count()) === 1, 30_000, async () => 'no model-change marker for sim-large');
  const switchNote = await markers.innerText();
  if (!/cache/.test(switchNote)) fail(`the switch does not say what it costs: ${switchNote}`);
  await waitUntil(async () => / \/ 200k /.test(await view.locator('.meter-text').innerText()), 30_000, async () => `the meter did not move to the 200k window: ${await view.locator('.meter-text').innerText()}`);
  await shot(page, 'model-switched');
  log(`mode "Allow all": ${sandboxAfter}; models offered: ${offered.join(' | ')}; switched: ${switchNote.replace(/\s+/g, ' ')}`);

  // An @-mention picked from the completions, and a pasted image; "Allow all" runs the
  // fallback's ls and read without a card.
  await input.click();
  await input.pressSequentially('@READ');
  await view.locator('.mentions .mention', { hasText: 'README.md' }).first().waitFor({ timeout: 30_000 });
  await shot(page, 'mention-completion');
  await input.press('Tab');
  await input.pressSequentially('what does this screenshot show?');
  if ((await input.inputValue()) !== '@README.md what does this screenshot show?') fail(`the mention was not completed: ${await input.inputValue()}`);
  await view.locator('textarea.prompt').evaluate((el, png) => {
    const bytes = Uint8Array.from(atob(png), (c) => c.charCodeAt(0));
    const data = new DataTransfer();
    data.items.add(new File([bytes], 'screenshot.png', { type: 'image/png' }));
    el.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
  }, PNG);
  await view.locator('.image-strip img').waitFor({ timeout: 15_000 });
  await shot(page, 'pasted-image');
  const usersBefore = await view.locator('.item.user').count();
  await input.press('Enter');
  await waitUntil(async () => (await view.locator('.item.user').count()) > usersBefore, 30_000, async () => 'the prompt did not appear');
  await waitIdle(view, 180_000, async (_card, title) => fail(`"Allow all" still asked: ${title}`));
  const sent = view.locator('.item.user').last();
  await sent.locator('.attachment', { hasText: '@README.md' }).waitFor({ timeout: 30_000 });
  if ((await sent.locator('img.thumb').count()) !== 1) fail('the sent prompt does not show its image');
  await sent.scrollIntoViewIfNeeded();
  await shot(page, 'mention-and-image');
  log('the prompt went with its @README.md attachment and the pasted image; no card under "Allow all"');

  // Reload Window: the view comes back with the session, and the prompt box is empty (the
  // last sent prompt is not put back).
  log('Developer: Reload Window');
  await runCommand(page, 'Developer: Reload Window');
  await page.waitForSelector('.monaco-workbench', { timeout: 60_000 });
  await page.waitForTimeout(8000);
  // The view comes back by itself when it was open; "Agent: Open Chat" otherwise (a click on
  // the activity bar would toggle an open view closed).
  view = await findFrame(page, 'textarea.prompt', 20_000, false);
  if (!view) {
    await runCommand(page, 'Agent: Open Chat');
    view = await findFrame(page, 'textarea.prompt', 60_000);
  }
  await waitUntil(async () => !(await view.locator('textarea.prompt').isDisabled()), 60_000, async () => 'the view did not come back after the reload');
  await view.locator('.marker.compaction.status-completed').first().waitFor({ timeout: 60_000 });
  const draft = await view.locator('textarea.prompt').inputValue();
  if (draft !== '') fail(`the reload put "${draft}" back in the prompt box`);
  const reloadedTools = await view.locator('details.tool').count();
  if (reloadedTools === 0) fail('the reloaded session shows no tool calls');
  // Reloaded from the ledger: the model the session switched to, the rejected command with
  // its reason, the restore marker, and the attachment and image of the last prompt.
  await waitUntil(async () => (await view.locator('.model-select').inputValue()) === 'sim-large', 30_000, async () => `the picker shows ${await view.locator('.model-select').inputValue()} after the reload`);
  const rejectedAgain = view.locator('details.tool.status-rejected').first();
  await rejectedAgain.locator('summary').click();
  const denialAgain = await rejectedAgain.locator('.denial').innerText();
  if (denialAgain !== denial) fail(`the rejection reads "${denialAgain}" after the reload, "${denial}" live`);
  if ((await view.locator('.marker.file-restore').count()) === 0) fail('the restore marker is gone after the reload');
  const reloadedTitles = await toolTitlesOfTurn(view, prompts[writeTurn]);
  if (JSON.stringify(reloadedTitles) !== JSON.stringify(writeTitles)) {
    fail(`tool titles differ after the reload: ${JSON.stringify(writeTitles)} live, ${JSON.stringify(reloadedTitles)} reloaded`);
  }
  const lastPrompt = view.locator('.item.user').last();
  if ((await lastPrompt.locator('.attachment', { hasText: '@README.md' }).count()) !== 1 || (await lastPrompt.locator('img.thumb').count()) !== 1) {
    fail('the last prompt lost its attachment or image after the reload');
  }
  await shot(page, 'after-reload');
  log(`reloaded: ${reloadedTools} tool calls, empty prompt box`);

  // An API key through "Agent: Set API Key": kept in secret storage, the server restarts with
  // it in its environment, and it appears in no log or settings file. The reopened session
  // still shows the compaction marker (from agent/session/load).
  const secret = 'sk-ant-e2e-NOT-A-REAL-KEY-4711';
  log('Agent: Set API Key');
  await runCommand(page, 'Agent: Set API Key');
  await page.locator('.quick-input-widget').getByText('Anthropic', { exact: true }).first().waitFor({ timeout: 15_000 });
  await page.keyboard.press('Enter');
  await page.locator('.quick-input-widget input[type="password"]').waitFor({ timeout: 15_000 });
  await page.keyboard.type(secret);
  await shot(page, 'api-key-input');
  await page.keyboard.press('Enter');
  const logFile = () => {
    const root = join(tmp, 'data', 'logs');
    const out = spawnSync('grep', ['-rl', 'Restarting the server: an API key changed', root], { encoding: 'utf8' });
    return out.stdout.trim();
  };
  await waitUntil(async () => logFile() !== '', 60_000, async () => 'the server did not restart after the key changed');
  await waitUntil(
    async () => readFileSync(logFile(), 'utf8').includes('API keys from secret storage: ANTHROPIC_API_KEY'),
    60_000,
    async () => 'the restarted server did not get the key',
  );
  const leaks = spawnSync('grep', ['-rl', secret, join(tmp, 'data', 'logs'), join(tmp, 'data', 'User'), join(tmp, 'data', 'Machine')], { encoding: 'utf8' }).stdout.trim();
  if (leaks) fail(`the API key leaked into ${leaks}`);
  await waitUntil(async () => !(await view.locator('textarea.prompt').isDisabled()), 60_000, async () => 'the view did not come back');
  // Reloaded from the ledger: the permission cards (not part of the ledger) are gone, the
  // compaction marker is there.
  await waitUntil(async () => (await view.locator('.card.permission').count()) === 0, 30_000, async () => 'the session was not reloaded');
  await view.locator('.marker.compaction.status-completed').first().waitFor({ timeout: 30_000 });
  await shot(page, 'after-key-restart');
  log('key stored, server restarted with it, no key in logs or settings; session reloaded with its compaction marker');
  log(`PASS: screenshots in ${ARTIFACTS}`);
}

/** The titles of the tool calls of the turn started by `prompt`, as the view shows them. */
async function toolTitlesOfTurn(view, prompt) {
  return view.locator('.transcript').evaluate((transcript, prompt) => {
    const users = [...transcript.querySelectorAll('.item.user')].filter((u) => u.textContent.includes(prompt));
    const titles = [];
    for (let el = users.at(-1)?.nextElementSibling; el && !el.matches('.item.user'); el = el.nextElementSibling) {
      const title = el.querySelector('.tool-title');
      if (title) titles.push(title.textContent);
    }
    return titles;
  }, prompt);
}

async function runCommand(page, title) {
  await page.keyboard.press('F1');
  await page.locator('.quick-input-widget').waitFor({ timeout: 15_000 });
  await page.keyboard.type(title);
  await page.waitForTimeout(800);
  await page.keyboard.press('Enter');
}

async function setSettingInEditor(page, key, value) {
  await page.keyboard.press('Control+Comma');
  await page.locator('.settings-editor').waitFor({ timeout: 30_000 });
  await page.waitForTimeout(1500);
  // The search box has the focus.
  await page.keyboard.type(key);
  await page.waitForTimeout(2000);
  await shot(page, 'settings-search');
  const input = page.locator('.settings-editor .setting-item-contents input.input').first();
  if ((await input.count()) === 0) {
    // Machine-overridable settings live under "Remote" when the extension host is remote
    // (code-server), not under "User".
    await page.locator('.settings-editor .settings-tabs-widget .action-label', { hasText: /^Remote/ }).first().click();
    await page.waitForTimeout(1500);
  }
  await input.waitFor({ timeout: 15_000 });
  await input.click();
  await page.keyboard.press('Control+KeyA');
  await page.keyboard.type(value);
  await page.keyboard.press('Tab');
  await page.waitForTimeout(1500);
  await page.keyboard.press('Control+KeyW');
}

function scenarioPrompts() {
  const text = readFileSync(SCENARIO, 'utf8');
  const prompts = [...text.matchAll(/^\s*- user:\s*"((?:[^"\\]|\\.)*)"\s*$/gm)].map((m) => JSON.parse(`"${m[1]}"`));
  if (prompts.length === 0) fail(`no prompts found in ${SCENARIO}`);
  return prompts;
}

async function send(view, prompt) {
  const users = view.locator('.item.user');
  const before = await users.count();
  const input = view.locator('textarea.prompt');
  await input.fill(prompt);
  await input.press('Enter');
  // The prompt shows at once (then becomes the recorded user message).
  await waitUntil(async () => (await users.count()) > before, 30_000, async () => `the prompt did not appear: ${prompt}`);
}

let cardShot = false;

/** Until the turn ends; answers each permission card meanwhile: with the button `policy`
 * picks (a selector), by default its first "allow" option. */
async function waitIdle(view, timeoutMs = 180_000, policy = undefined) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const card = view.locator('.card.permission.status-pending').first();
    if ((await card.count()) > 0) {
      const title = (await card.locator('.card-title').innerText()).replace(/\s+/g, ' ').trim();
      const choice = (policy && (await policy(card, title))) || 'button.option-allow_once, button.option-allow_always';
      const allow = card.locator(choice).first();
      log(`permission card: ${title} -> ${await allow.innerText()}`);
      if (!cardShot) {
        cardShot = true;
        await card.scrollIntoViewIfNeeded();
        await shot(view.page(), 'permission-card');
      }
      await allow.click();
    }
    if (await view.locator('button.send').isVisible()) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  fail('the turn did not finish in time');
}

async function findFrame(page, selector, timeoutMs, required = true) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    for (const frame of page.frames()) {
      if (await frame.$(selector).catch(() => null)) return frame;
    }
    await page.waitForTimeout(500);
  }
  if (!required) return undefined;
  await shot(page, 'view-missing');
  fail(`no frame with ${selector}`);
}

async function waitUntil(predicate, timeoutMs, describe) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await predicate()) return;
    await new Promise((r) => setTimeout(r, 500));
  }
  fail(await describe());
}

async function shot(page, name) {
  stage += 1;
  const file = join(ARTIFACTS, `${String(stage).padStart(2, '0')}-${name}.png`);
  await page.screenshot({ path: file });
}

function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
    server.on('error', reject);
  });
}

async function waitForHttp(url, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url);
      if (res.ok) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`${url} did not answer in ${timeoutMs / 1000}s`);
}

async function cleanup() {
  await browser?.close().catch(() => undefined);
  if (codeServer?.pid && codeServer.exitCode === null) {
    // code-server and its extension host (and the Python server under it) share a process group.
    try {
      process.kill(-codeServer.pid, 'SIGTERM');
    } catch {
      // already gone
    }
    await new Promise((r) => setTimeout(r, 1000));
    try {
      process.kill(-codeServer.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  if (tmp && !KEEP) rmSync(tmp, { recursive: true, force: true });
}

try {
  await main();
  await cleanup();
} catch (error) {
  console.error(`[e2e] FAIL: ${error instanceof Error ? error.message : String(error)}`);
  await cleanup();
  process.exit(1);
}
