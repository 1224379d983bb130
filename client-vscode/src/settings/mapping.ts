/**
 * From the extension's `agentServer.*` settings to the server's `agent` section, and from the
 * stored API keys to the server's environment. Pure: no `vscode` import; the extension passes
 * a `WorkspaceConfiguration` (it has the same `get`).
 */
import { DEFAULT_PROVIDER, KEY_FAMILIES, PROVIDER_KEYS, PROVIDERS, type KeyFamily } from '../protocol/providers';
import {
  CacheRetentionSettingValues,
  CompactionEngineValues,
  PermissionModeValues,
  SandboxModeValues,
  ThinkingLevelValues,
  type AgentSettings,
} from '../protocol/types';

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
 * Settings that carry authority (docs/security.md): the permission mode, and the sessions
 * folder (where ledgers go). They are read only from the user's own settings (User, Remote):
 * a workspace's `.vscode/settings.json` or a folder's, which a repository can ship or an agent
 * can write, is ignored for them (`ignoredWorkspaceValues` names them, for the log). The other
 * settings that carry authority are `machine`-scoped in package.json, which VS Code never
 * takes from a workspace.
 */
export const USER_ONLY_KEYS: readonly string[] = ['permissions.mode', 'sessionsDir'];

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
export const CLIENT_ONLY_KEYS = ['python'] as const;


function str(config: ConfigReader, key: string): string | undefined {
  const v = valueOf(config, key);
  if (typeof v !== 'string') return undefined;
  const t = v.trim();
  return t === '' ? undefined : t;
}

function int(config: ConfigReader, key: string): number | undefined {
  const v = valueOf(config, key);
  if (typeof v !== 'number' || !Number.isFinite(v)) return undefined;
  return Math.max(0, Math.round(v));
}

function bool(config: ConfigReader, key: string): boolean | undefined {
  const v = valueOf(config, key);
  return typeof v === 'boolean' ? v : undefined;
}

/** A list of non-empty strings (shell commands), trimmed; undefined when there is none. */
function commands(config: ConfigReader, key: string): string[] | undefined {
  const v = config.get<unknown>(key);
  if (!Array.isArray(v)) return undefined;
  const list = v.filter((c): c is string => typeof c === 'string' && c.trim() !== '').map((c) => c.trim());
  return list.length > 0 ? list : undefined;
}

function oneOf<T extends string>(config: ConfigReader, key: string, allowed: readonly T[]): T | undefined {
  const v = str(config, key);
  return v !== undefined && (allowed as readonly string[]).includes(v) ? (v as T) : undefined;
}

/**
 * The `agent` section for the server: camelCase keys, nested `compaction` and `permissions`
 * objects as docs/protocol.md shows them; unset or empty values are left out so the server's
 * defaults apply.
 */
export function agentSettingsFrom(config: ConfigReader): AgentSettings {
  const settings: AgentSettings = {};
  const provider = oneOf(config, 'provider', PROVIDERS);
  if (provider) settings.provider = provider;
  const model = str(config, 'model');
  if (model) settings.model = model;
  const baseUrl = str(config, 'baseUrl');
  if (baseUrl) settings.baseUrl = baseUrl;
  const apiKeyEnv = str(config, 'apiKeyEnv');
  if (apiKeyEnv) settings.apiKeyEnv = apiKeyEnv;
  const cacheRetention = oneOf(config, 'cacheRetention', CacheRetentionSettingValues);
  if (cacheRetention) settings.cacheRetention = cacheRetention;
  const thinking = oneOf(config, 'thinking', ThinkingLevelValues);
  if (thinking) settings.thinking = thinking;

  const compaction: NonNullable<AgentSettings['compaction']> = {};
  const enabled = bool(config, 'compaction.enabled');
  if (enabled !== undefined) compaction.enabled = enabled;
  const reserveTokens = int(config, 'compaction.reserveTokens');
  if (reserveTokens !== undefined) compaction.reserveTokens = reserveTokens;
  const keepRecentTokens = int(config, 'compaction.keepRecentTokens');
  if (keepRecentTokens !== undefined) compaction.keepRecentTokens = keepRecentTokens;
  const compactionModel = str(config, 'compaction.model');
  if (compactionModel) compaction.model = compactionModel;
  const threshold = config.get<unknown>('compaction.threshold');
  if (typeof threshold === 'number' && Number.isFinite(threshold) && threshold > 0) compaction.threshold = threshold;
  const hooks: NonNullable<NonNullable<AgentSettings['compaction']>['hooks']> = {};
  const before = commands(config, 'compaction.hooks.before');
  if (before) hooks.before = before;
  const after = commands(config, 'compaction.hooks.after');
  if (after) hooks.after = after;
  const hookTimeout = config.get<unknown>('compaction.hooks.timeout');
  if ((before || after) && typeof hookTimeout === 'number' && hookTimeout > 0) hooks.timeout = hookTimeout;
  if (Object.keys(hooks).length > 0) compaction.hooks = hooks;
  const engine = oneOf(config, 'compaction.engine', CompactionEngineValues);
  if (engine) compaction.engine = engine;
  const clearToolResults = bool(config, 'compaction.clearToolResults');
  if (clearToolResults !== undefined) compaction.clearToolResults = clearToolResults;
  if (Object.keys(compaction).length > 0) settings.compaction = compaction;

  const mode = oneOf(config, 'permissions.mode', PermissionModeValues);
  if (mode) settings.permissions = { mode };

  const tools: NonNullable<AgentSettings['tools']> = {};
  const sandbox = oneOf(config, 'tools.sandbox', SandboxModeValues);
  if (sandbox) tools.sandbox = sandbox;
  const network = bool(config, 'tools.network');
  if (network !== undefined) tools.network = network;
  const passed = config.get<unknown>('tools.env.pass');
  if (Array.isArray(passed)) {
    const names = passed.filter((n): n is string => typeof n === 'string' && n.trim() !== '').map((n) => n.trim());
    if (names.length > 0) tools.env = { pass: names };
  }
  if (Object.keys(tools).length > 0) settings.tools = tools;

  const sessionsDir = str(config, 'sessionsDir');
  if (sessionsDir) settings.sessionsDir = expandHome(sessionsDir);

  const mcp: NonNullable<AgentSettings['mcp']> = {};
  const servers = config.get<unknown>('mcp.servers');
  if (servers && typeof servers === 'object' && !Array.isArray(servers) && Object.keys(servers).length > 0) {
    mcp.servers = servers as Record<string, unknown>;
  }
  const startupTimeout = int(config, 'mcp.startupTimeout');
  if (startupTimeout) mcp.startupTimeout = startupTimeout;
  const toolTimeout = int(config, 'mcp.toolTimeout');
  if (toolTimeout) mcp.toolTimeout = toolTimeout;
  if (Object.keys(mcp).length > 0) settings.mcp = mcp;
  return settings;
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
