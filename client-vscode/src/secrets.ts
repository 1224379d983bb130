/**
 * API keys in VS Code's SecretStorage, one per provider family. They are handed to the server
 * in its environment at launch and never written to settings or logs.
 */
import type * as vscode from 'vscode';
import { KEY_FAMILIES as KEYS, type KeyFamily } from './protocol/providers';

const SECRET_PREFIX = 'agentServer.apiKey.';

/** The stored keys as the key picker offers them (protocol/providers.ts, generated). */
export const KEY_FAMILIES: readonly { family: KeyFamily; label: string; detail: string }[] = (
  Object.entries(KEYS) as [KeyFamily, (typeof KEYS)[KeyFamily]][]
).map(([family, key]) => ({
  family,
  label: key.label,
  detail:
    `${key.providers.length > 1 ? 'providers' : 'provider'} ${key.providers.map((p) => `"${p}"`).join(' and ')}; ` +
    `handed to the server as ${key.variable}`,
}));

/** A valid environment variable name for an MCP secret (`${NAME}` in an MCP configuration). */
export const MCP_SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const MCP_SECRETS = 'agentServer.mcpSecrets';

/**
 * Secrets for MCP servers (tokens, passwords), by environment variable name, kept as one JSON
 * object in SecretStorage. They are handed to the server's environment at launch, where MCP
 * configurations read them as `${NAME}` (docs/mcp.md).
 */
export class McpSecretStore {
  constructor(private readonly secrets: vscode.SecretStorage) {}

  async all(): Promise<Record<string, string>> {
    const raw = await this.secrets.get(MCP_SECRETS);
    if (!raw) return {};
    try {
      const parsed = JSON.parse(raw) as unknown;
      if (!parsed || typeof parsed !== 'object') return {};
      return Object.fromEntries(
        Object.entries(parsed).filter(([k, v]) => MCP_SECRET_NAME.test(k) && typeof v === 'string'),
      ) as Record<string, string>;
    } catch {
      return {};
    }
  }

  /** Stores `value` under `name`; an empty value removes it. */
  async set(name: string, value: string): Promise<void> {
    const all = await this.all();
    if (value) all[name] = value;
    else delete all[name];
    await this.secrets.store(MCP_SECRETS, JSON.stringify(all));
  }

  onDidChange(listener: () => void): vscode.Disposable {
    return this.secrets.onDidChange((e) => {
      if (e.key === MCP_SECRETS) listener();
    });
  }
}

export class ApiKeyStore {
  constructor(private readonly secrets: vscode.SecretStorage) {}

  get(family: KeyFamily): Thenable<string | undefined> {
    return this.secrets.get(SECRET_PREFIX + family);
  }

  async set(family: KeyFamily, key: string): Promise<void> {
    await this.secrets.store(SECRET_PREFIX + family, key);
  }

  async delete(family: KeyFamily): Promise<void> {
    await this.secrets.delete(SECRET_PREFIX + family);
  }

  async all(): Promise<Partial<Record<KeyFamily, string>>> {
    const keys: Partial<Record<KeyFamily, string>> = {};
    for (const { family } of KEY_FAMILIES) {
      const key = await this.get(family);
      if (key) keys[family] = key;
    }
    return keys;
  }

  onDidChange(listener: () => void): vscode.Disposable {
    return this.secrets.onDidChange((e) => {
      if (e.key.startsWith(SECRET_PREFIX)) listener();
    });
  }
}
