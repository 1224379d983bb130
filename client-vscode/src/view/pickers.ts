/**
 * The view's pickers, as VS Code's quick pick: every choice in full, with its details (a
 * session's first prompt, a model's window and prices), whatever the width of the view. Text
 * from the server (a session's title and first prompt, a model's name) goes in through
 * `labelText`: shown as it is, never as an icon or a link.
 */
import * as vscode from 'vscode';
import type { SessionController } from '../controller';
import { choicesOf } from '../protocol/settings';
import { ThinkingLevelValues, type ModelChoice, type PermissionMode, type SessionSummary, type ThinkingLevel } from '../protocol/types';
import { formatTokens } from '../state/meter';
import { labelText, literal } from '../webview/literal';

interface Item<T> extends vscode.QuickPickItem {
  value: T;
}

/**
 * The first item (the one Enter takes) is the session open now, else the newest: Enter out of
 * habit continues, it never starts a new session; "New session" comes right after it.
 */
export async function pickSession(controller: SessionController): Promise<void> {
  await controller.refreshSessions();
  const { sessions, sessionId } = controller.state;
  const listed: Item<string | undefined>[] = sessions.map((s) => ({ ...sessionItem(s, sessionId), value: s.sessionId }));
  const first = Math.max(0, listed.findIndex((item) => item.value === sessionId));
  const fresh: Item<string | undefined> = { label: '$(add) New session', description: 'starts with your next prompt', value: undefined };
  const items = listed.length
    ? [listed[first]!, fresh, ...listed.filter((_, index) => index !== first)]
    : [fresh];
  const picked = await vscode.window.showQuickPick(items, {
    title: 'Agent: sessions in this workspace',
    placeHolder: 'Pick a session to continue (type to filter)',
    matchOnDescription: true,
    matchOnDetail: true,
  });
  if (!picked) return;
  if (picked.value === undefined) await controller.newSession();
  else if (picked.value !== sessionId) await controller.loadSession(picked.value);
}

/** One session of the workspace, the open one first; undefined when the user picks none. */
async function pickOneSession(controller: SessionController, title: string): Promise<SessionSummary | undefined> {
  await controller.refreshSessions();
  const { sessions, sessionId } = controller.state;
  if (!sessions.length) {
    void vscode.window.showInformationMessage('There are no sessions in this workspace yet.');
    return undefined;
  }
  const ordered = [...sessions.filter((s) => s.sessionId === sessionId), ...sessions.filter((s) => s.sessionId !== sessionId)];
  const picked = await vscode.window.showQuickPick(
    ordered.map((s) => ({ ...sessionItem(s, sessionId), value: s })),
    { title, placeHolder: 'Pick a session (type to filter)', matchOnDescription: true, matchOnDetail: true },
  );
  return picked?.value;
}

/** "Agent: Rename Session": a session's title from now on. */
export async function renameSession(controller: SessionController): Promise<void> {
  const session = await pickOneSession(controller, 'Agent: rename which session?');
  if (!session) return;
  const title = await vscode.window.showInputBox({
    title: 'Agent: rename the session',
    prompt: 'Its title from now on (one line)',
    value: session.title ?? '',
    validateInput: (value) => (value.trim() ? undefined : 'A title cannot be empty'),
  });
  if (title === undefined || !title.trim()) return;
  await controller.renameSession(session.sessionId, title);
}

/** "Agent: Delete Session": a session removed for good, once the user confirms. */
export async function deleteSession(controller: SessionController): Promise<void> {
  const session = await pickOneSession(controller, 'Agent: delete which session?');
  if (!session) return;
  const name = session.title || session.firstPrompt || 'Untitled session';
  const answer = await vscode.window.showWarningMessage(
    `Delete the session "${name}"?`,
    { modal: true, detail: 'Its conversation and saved outputs are removed for good; this cannot be undone.' },
    'Delete',
  );
  if (answer === 'Delete') await controller.deleteSession(session.sessionId);
}

export async function pickModel(controller: SessionController): Promise<void> {
  await controller.listModels();
  const { models, model } = controller.state;
  if (!models.length) {
    void vscode.window.showWarningMessage('No models to pick from: is the agent server running?');
    return;
  }
  const picked = await vscode.window.showQuickPick(
    models.map<Item<string>>((m) => ({
      label: `${m.id === model?.id ? '$(check) ' : ''}${labelText(m.name)}`,
      description: `${formatTokens(m.contextWindow)} window · ${price(m.pricing.input)} in / ${price(m.pricing.output)} out per M tokens`,
      detail: labelText(modelDetail(m)),
      value: m.id,
    })),
    {
      title: 'Agent: model for this session',
      placeHolder: 'Switching keeps the session; the transcript says what it costs',
      matchOnDescription: true,
    },
  );
  if (picked && picked.value !== model?.id) await controller.setModel(picked.value);
}

/** Each mode with its name and meaning, as the settings describe them (protocol/settings.ts). */
const MODES = choicesOf('permissions.mode') as readonly [PermissionMode, string, string][];

export async function pickMode(controller: SessionController): Promise<void> {
  const current = controller.state.mode;
  const picked = await vscode.window.showQuickPick(
    MODES.map<Item<PermissionMode>>(([mode, label, detail]) => ({ label: `${mode === current ? '$(check) ' : ''}${label}`, detail, value: mode })),
    { title: 'Agent: when tools ask first', placeHolder: 'Applies at once, even to the running turn\u2019s next tool call' },
  );
  if (picked && picked.value !== current) await controller.setMode(picked.value);
}

const THINKING: Record<ThinkingLevel, string> = {
  off: 'No extended thinking (OpenAI: the model\u2019s default effort)',
  low: 'Anthropic: low effort or a 4k budget \u00b7 OpenAI: low effort',
  medium: 'Anthropic: medium effort or a 10k budget \u00b7 OpenAI: medium effort',
  high: 'Anthropic: high effort or a 32k budget \u00b7 OpenAI: high effort',
};

export async function pickThinking(controller: SessionController): Promise<void> {
  const { thinking, canThink, model } = controller.state;
  const current = thinking ?? 'off';
  const picked = await vscode.window.showQuickPick(
    ThinkingLevelValues.map<Item<ThinkingLevel>>((level) => ({ label: `${level === current ? '$(check) ' : ''}${level}`, detail: THINKING[level], value: level })),
    {
      title: 'Agent: how hard the model thinks',
      placeHolder:
        canThink === false
          ? `${literal(model?.name ?? 'This model', { newline: false, tab: false })} does not think on request`
          : 'Billed as output; on Anthropic a change re-reads the conversation uncached',
    },
  );
  if (picked && picked.value !== current) await controller.setThinking(picked.value);
}

/** A session as the pickers show it: its title (checked when open), when and how long, and
 * its first prompt; all of it text from the server, shown literally. */
function sessionItem(s: SessionSummary, open: string | undefined): vscode.QuickPickItem {
  return {
    label: `${s.sessionId === open ? '$(check) ' : ''}${labelText(s.title || 'Untitled session')}`,
    description: labelText(sessionDescription(s)),
    detail: s.firstPrompt ? labelText(`First prompt: ${s.firstPrompt}`) : undefined,
  };
}

function sessionDescription(s: SessionSummary): string {
  const prompts = s.promptCount === undefined ? '' : `${s.promptCount} prompt${s.promptCount === 1 ? '' : 's'} · `;
  return `${prompts}started ${dateTime(s.createdAt)} · ${s.sessionId.slice(0, 8)}`;
}

function modelDetail(m: ModelChoice): string {
  return [
    `${m.vendor} ${m.id}${m.source === 'user' ? ' (yours)' : ''}`,
    `up to ${formatTokens(m.maxOutput)} out`,
    `cache ${price(m.pricing.cacheRead)}/${price(m.pricing.cacheWrite)}`,
    m.images ? 'images' : 'text only',
    m.thinking ? 'thinks' : '',
  ]
    .filter(Boolean)
    .join(' · ');
}

function price(usdPerMillion: number): string {
  return `$${usdPerMillion < 1 ? usdPerMillion.toFixed(2) : String(Number(usdPerMillion.toFixed(2)))}`;
}

function dateTime(iso: string): string {
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return iso;
  const pad = (n: number): string => String(n).padStart(2, '0');
  return `${t.getFullYear()}-${pad(t.getMonth() + 1)}-${pad(t.getDate())} ${pad(t.getHours())}:${pad(t.getMinutes())}`;
}
