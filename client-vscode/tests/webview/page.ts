/**
 * The chat page the extension serves (same HTML, CSP, script and stylesheet), in headless
 * Chromium, with what the view posts to the host recorded.
 */
import { mkdirSync, readFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import type { Action, ViewState } from '../../src/state/reducer';
import { webviewHtml } from '../../src/view/html';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const ARTIFACTS = join(ROOT, 'artifacts');
const ORIGIN = 'https://agent-webview.test';
const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';

let browser: Browser;

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'dist', 'webview.js'))) throw new Error('dist/webview.js is missing: run `npm run build` first');
  mkdirSync(ARTIFACTS, { recursive: true });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'],
  });
});

afterAll(async () => {
  await browser?.close();
});

export interface Opened {
  page: Page;
  errors: string[];
  posted: () => Promise<unknown[]>;
}

export async function openView(
  options: { omitCsp?: boolean; width?: number; height?: number; saved?: unknown } = {},
): Promise<Opened> {
  const page = await browser.newPage({ viewport: { width: options.width ?? 460, height: options.height ?? 1500 } });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  const nonce = 'n0nceForTheWebviewTest0123456789';
  let html = webviewHtml({
    cspSource: ORIGIN,
    nonce,
    scriptUri: `${ORIGIN}/dist/webview.js`,
    styleUri: `${ORIGIN}/media/chat.css`,
    omitCsp: options.omitCsp,
  });
  // The workbench puts the theme's variables on the page; this stands in for it.
  html = html.replace('</head>', `<link rel="stylesheet" href="${ORIGIN}/theme.css">\n</head>`);
  const files: Record<string, [string, string]> = {
    '/dist/webview.js': [join(ROOT, 'dist', 'webview.js'), 'text/javascript'],
    '/media/chat.css': [join(ROOT, 'media', 'chat.css'), 'text/css'],
    '/theme.css': [join(ROOT, 'tests', 'webview', 'theme.css'), 'text/css'],
  };
  await page.route(`${ORIGIN}/**`, async (route) => {
    const path = new URL(route.request().url()).pathname;
    if (path === '/') return route.fulfill({ status: 200, contentType: 'text/html', body: html });
    const file = files[path];
    if (file) return route.fulfill({ status: 200, contentType: file[1], body: readFileSync(file[0]) });
    return route.fulfill({ status: 404, body: 'not found' });
  });
  // VS Code provides acquireVsCodeApi; record what the view posts to the host.
  // `saved`: what the view saved before a reload (VS Code hands it back through getState).
  await page.addInitScript((saved) => {
    const w = window as unknown as { __posted: unknown[]; acquireVsCodeApi: () => unknown };
    w.__posted = [];
    let state: unknown = saved;
    w.acquireVsCodeApi = () => ({
      postMessage: (m: unknown) => w.__posted.push(m),
      getState: () => state,
      setState: (s: unknown) => {
        state = s;
        (w as unknown as { __saved: unknown }).__saved = s;
      },
    });
  }, options.saved);
  await page.goto(`${ORIGIN}/`);
  await page.waitForSelector('.toolbar');
  return {
    page,
    errors,
    posted: () => page.evaluate(() => (window as unknown as { __posted: unknown[] }).__posted),
  };
}

/** Resets the view to `state` and applies `actions` in one message. */
export async function show(page: Page, state: ViewState, actions: Action[] = []): Promise<void> {
  await page.evaluate(
    ({ state, actions }) => {
      window.postMessage({ type: 'reset', state }, '*');
      if (actions.length) window.postMessage({ type: 'actions', actions }, '*');
    },
    { state, actions },
  );
}

