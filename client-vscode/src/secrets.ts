/**
 * API keys in VS Code's SecretStorage, one per provider family. They are handed to the server
 * in its environment at launch and never written to settings or logs.
 */
import type * as vscode from 'vscode';
import type { KeyFamily } from './settings/mapping';

const SECRET_PREFIX = 'agentServer.apiKey.';

export const KEY_FAMILIES: readonly { family: KeyFamily; label: string; detail: string }[] = [
  { family: 'anthropic', label: 'Anthropic', detail: 'provider "anthropic"; handed to the server as ANTHROPIC_API_KEY' },
  { family: 'openai', label: 'OpenAI', detail: 'providers "openai-chat" and "openai-responses"; handed to the server as OPENAI_API_KEY' },
];

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
