/**
 * From the extension's `agentServer.*` settings to the server's `agent` section, and from the
 * stored API keys to the server's environment. Pure: no `vscode` import; the extension passes
 * a `WorkspaceConfiguration` (it has the same `get`).
 */
import { DEFAULT_PROVIDER, KEY_FAMILIES, PROVIDER_KEYS, PROVIDERS, type KeyFamily } from '../protocol/providers';
import { EDITOR_SETTINGS, type EditorSetting } from '../protocol/settings';
import type { AgentSettings } from '../protocol/types';

export { PROVIDERS, type KeyFamily, type Provider } from '../protocol/providers';

/** The extension's configuration section. */
export const CONFIG_SECTION = 'agentServer';
/** The section the server asks for in `workspace/configuration`. */
export const SERVER_SECTION = 'agent';

/** The variable each stored key is handed to the server under. */
export const DEFAULT_KEY_ENV = Object.fromEntries(
  Object.entries(KEY_FAMILIES).map(([family, key]) => [family, key.variable]),
) as Record<KeyFamily, string>;

const FAMILIES = Object.keys(KEY_FAMILIES) as KeyFamily[];

/** Anything with WorkspaceConfiguration's `get(key)` (keys relative to `agentServer`), and
 * its `inspect(key)`, which says where a value comes from. */
export interface ConfigReader {
  get<T>(key: string): T | undefined;
  inspect?<T>(
    key: string,
  ): { defaultValue?: T; globalValue?: T; workspaceValue?: T; workspaceFolderValue?: T } | undefined;
}

/**
 * Settings that carry authority (docs/security.md) and that VS Code would take from a
 * workspace: the permission mode, and the sessions folder (where ledgers go). They are read
 * only from the user's own settings (User, Remote): a workspace's `.vscode/settings.json` or a
 * folder's, which a repository can ship or an agent can write, is ignored for them
 * (`ignoredWorkspaceValues` names them, for the log). The other settings that carry authority
 * are `machine`-scoped in package.json, which VS Code never takes from a workspace. Both come
 * from the settings' one description (protocol/settings.ts).
 */
export const USER_ONLY_KEYS: readonly string[] = EDITOR_SETTINGS.filter((s) => s.userOnly).map((s) => s.key);

/** The value of `key`: for a user-only key, the user's own (User or Remote settings), else
 * the default, never a workspace's. */
export function valueOf(config: ConfigReader, key: string): unknown {
  if (!config.inspect || !USER_ONLY_KEYS.includes(key)) return config.get<unknown>(key);
  const where = config.inspect<unknown>(key);
  return where?.globalValue ?? where?.defaultValue;
}

/** The user-only keys a workspace or folder sets: ignored (`USER_ONLY_KEYS`). */
export function ignoredWorkspaceValues(config: ConfigReader): string[] {
  return USER_ONLY_KEYS.filter((key) => {
    const where = config.inspect?.<unknown>(key);
    return where?.workspaceValue !== undefined || where?.workspaceFolderValue !== undefined;
  });
}

/** Settings that only the extension reads; they never go to the server. */
export const CLIENT_ONLY_KEYS = ['python', 'review.openDiff'] as const;


/**
 * The `agent` section for the server: each setting the editor offers (protocol/settings.ts),
 * nested by its dotted key as docs/protocol.md shows it; unset, empty or out-of-bounds values
 * are left out so the server's defaults apply.
 */
export function agentSettingsFrom(config: ConfigReader): AgentSettings {
  const settings: Record<string, unknown> = {};
  for (const setting of EDITOR_SETTINGS) {
    const value = read(setting, valueOf(config, setting.key));
    if (value === undefined) continue;
    const path = setting.key.split('.');
    let node = settings;
    for (const part of path.slice(0, -1)) {
      node[part] ??= {};
      node = node[part] as Record<string, unknown>;
    }
    node[path[path.length - 1]!] = value;
  }
  return settings as AgentSettings;
}

/** One setting's value as the server takes it, or undefined to leave it to the server. */
function read(setting: EditorSetting, v: unknown): unknown {
  switch (setting.kind) {
    case 'boolean':
      return typeof v === 'boolean' ? v : undefined;
    case 'integer':
      return typeof v === 'number' && Number.isFinite(v) ? inBounds(setting, Math.max(0, Math.round(v))) : undefined;
    case 'number':
      return typeof v === 'number' && Number.isFinite(v) ? inBounds(setting, v) : undefined;
    case 'string':
      return trimmed(v);
    case 'folder': {
      const path = trimmed(v);
      return path === undefined ? undefined : expandHome(path);
    }
    case 'choice': {
      const choice = trimmed(v);
      return choice !== undefined && setting.values?.includes(choice) ? choice : undefined;
    }
    case 'object':
      return v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length > 0 ? v : undefined;
    default: {
      // a list of names, commands or paths: the non-empty strings, trimmed
      if (!Array.isArray(v)) return undefined;
      const list = v.filter((c): c is string => typeof c === 'string' && c.trim() !== '').map((c) => c.trim());
      return list.length > 0 ? list : undefined;
    }
  }
}

function trimmed(v: unknown): string | undefined {
  if (typeof v !== 'string') return undefined;
  const t = v.trim();
  return t === '' ? undefined : t;
}

function inBounds(setting: EditorSetting, v: number): number | undefined {
  if (setting.minimum !== undefined && v < setting.minimum) return undefined;
  if (setting.exclusiveMinimum !== undefined && v <= setting.exclusiveMinimum) return undefined;
  if (setting.maximum !== undefined && v > setting.maximum) return undefined;
  return v;
}

function expandHome(path: string): string {
  const home = typeof process !== 'undefined' ? process.env['HOME'] ?? process.env['USERPROFILE'] : undefined;
  if (home && (path === '~' || path.startsWith('~/'))) return home + path.slice(1);
  return path;
}

/** Which stored key a provider uses (unset: the default provider's). `sim` needs none. */
export function keyFamilyOf(provider: string | undefined): KeyFamily | undefined {
  const name = provider ?? DEFAULT_PROVIDER;
  return (PROVIDER_KEYS as Record<string, KeyFamily | null>)[name] ?? undefined;
}

/** The environment variable the server reads the key from (settings `apiKeyEnv`, else the default). */
export function keyVariableFor(settings: AgentSettings): string | undefined {
  const family = keyFamilyOf(settings.provider);
  if (settings.apiKeyEnv) return settings.apiKeyEnv;
  return family ? DEFAULT_KEY_ENV[family] : undefined;
}

/**
 * The server process's environment: the editor's, plus the stored keys under their default
 * names, plus the configured provider's key under `apiKeyEnv` when that names another variable.
 * A stored key wins over one inherited from the editor's environment.
 */
export function serverEnvironment(
  base: Readonly<Record<string, string | undefined>>,
  settings: AgentSettings,
  keys: Partial<Record<KeyFamily, string>>,
  mcpSecrets: Readonly<Record<string, string>> = {},
): Record<string, string | undefined> {
  // MCP secrets first: an API key of the same name wins.
  const env: Record<string, string | undefined> = { ...base, ...mcpSecrets };
  for (const family of FAMILIES) {
    const key = keys[family];
    if (key) env[DEFAULT_KEY_ENV[family]] = key;
  }
  const family = keyFamilyOf(settings.provider);
  if (settings.apiKeyEnv && family && keys[family]) env[settings.apiKeyEnv] = keys[family];
  // The server's stdout is the LSP stream; keep Python from buffering its stderr log.
  env['PYTHONUNBUFFERED'] = '1';
  return env;
}

/** For the output channel: the environment names that carry keys, never their values. */
export function describeKeys(keys: Partial<Record<KeyFamily, string>>, settings: AgentSettings): string {
  const names: string[] = [];
  for (const family of FAMILIES) {
    if (keys[family]) names.push(DEFAULT_KEY_ENV[family]);
  }
  const family = keyFamilyOf(settings.provider);
  if (settings.apiKeyEnv && family && keys[family]) names.push(settings.apiKeyEnv);
  return names.length ? `API keys from secret storage: ${names.join(', ')}` : 'no API key in secret storage';
}

/**
 * Whether a configuration change needs a new server process (the interpreter, or which
 * variable carries the key) rather than `workspace/didChangeConfiguration`.
 * `affects(key)` answers for keys relative to `agentServer`.
 */
export function restartReason(
  affects: (key: string) => boolean,
  settings: AgentSettings,
): string | undefined {
  if (affects('python')) return 'the Python interpreter changed';
  if (affects('apiKeyEnv')) return 'the API key variable changed';
  if (affects('provider') && settings.apiKeyEnv) return 'the provider changed and apiKeyEnv is set';
  return undefined;
}
