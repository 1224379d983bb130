import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  agentSettingsFrom,
  describeKeys,
  keyVariableFor,
  restartReason,
  serverEnvironment,
  ignoredWorkspaceValues,
  valueOf,
  type ConfigReader,
} from '../../src/settings/mapping';

/** A WorkspaceConfiguration-like reader over the flat keys as package.json declares them. */
function config(values: Record<string, unknown>): ConfigReader {
  return { get: <T>(key: string) => values[key] as T | undefined };
}

/** The defaults package.json contributes (generated from the settings' one description). */
const DEFAULTS: Record<string, unknown> = Object.fromEntries(
  Object.entries(contributedSettings()).map(([key, property]) => [key.replace(/^agentServer\./, ''), property.default]),
);

describe('agent settings from agentServer.*', () => {
  it('maps the defaults to the agent section, leaving empty values to the server', () => {
    expect(agentSettingsFrom(config(DEFAULTS))).toEqual({
      provider: 'anthropic',
      cacheRetention: 'short',
      thinking: 'off',
      compaction: {
        enabled: true,
        keepRecentTokens: 8000,
        hooks: { timeout: 30 },
        engine: 'local',
        clearToolResults: false,
      },
      permissions: { mode: 'allowReads' },
      tools: { sandbox: 'auto', network: false, terminal: { visible: false } },
      mcp: { startupTimeout: 30, firstRequestWait: 5, toolTimeout: 600 },
    });
  });

  it('nests compaction and permissions as docs/protocol.md names them, camelCase', () => {
    const settings = agentSettingsFrom(
      config({
        ...DEFAULTS,
        python: '/venv/bin/python',
        provider: 'sim',
        model: 'sim-small',
        baseUrl: ' http://127.0.0.1:8765 ',
        apiKeyEnv: 'MY_KEY',
        cacheRetention: 'long',
        'compaction.enabled': false,
        'compaction.reserveTokens': 9000.4,
        'compaction.keepRecentTokens': 4000,
        'compaction.model': 'sim-large',
        'compaction.engine': 'provider',
        'compaction.clearToolResults': true,
        'permissions.mode': 'ask',
        'tools.sandbox': 'always',
        'tools.network': true,
        'tools.env.pass': ['NPM_TOKEN', ' GH_* ', '', 7],
        sessionsDir: '/tmp/sessions',
      }),
    );
    expect(settings).toEqual({
      provider: 'sim',
      model: 'sim-small',
      baseUrl: 'http://127.0.0.1:8765',
      apiKeyEnv: 'MY_KEY',
      cacheRetention: 'long',
      thinking: 'off',
      compaction: {
        enabled: false,
        reserveTokens: 9000,
        keepRecentTokens: 4000,
        model: 'sim-large',
        hooks: { timeout: 30 },
        engine: 'provider',
        clearToolResults: true,
      },
      permissions: { mode: 'ask' },
      tools: { sandbox: 'always', network: true, env: { pass: ['NPM_TOKEN', 'GH_*'] }, terminal: { visible: false } },
      sessionsDir: '/tmp/sessions',
      mcp: { startupTimeout: 30, firstRequestWait: 5, toolTimeout: 600 },
    });
    expect(settings).not.toHaveProperty('python');
  });

  it('passes the threshold and the compaction hooks, leaving out empty commands', () => {
    const settings = agentSettingsFrom(
      config({
        ...DEFAULTS,
        'compaction.threshold': 0.6,
        'compaction.hooks.before': [' ./save-notes.sh ', '', 3],
        'compaction.hooks.after': ['logger compacted'],
        'compaction.hooks.timeout': 10,
      }),
    );
    expect(settings.compaction).toEqual({
      enabled: true,
      keepRecentTokens: 8000,
      engine: 'local',
      clearToolResults: false,
      threshold: 0.6,
      hooks: { before: ['./save-notes.sh'], after: ['logger compacted'], timeout: 10 },
    });
    // Out of bounds (threshold above 0, timeout at most 600): left to the server's default.
    expect(agentSettingsFrom(config({ 'compaction.threshold': 0, 'compaction.hooks.timeout': 601 }))).toEqual({});
  });

  it('passes cacheRetention auto through', () => {
    expect(agentSettingsFrom(config({ cacheRetention: 'auto' })).cacheRetention).toBe('auto');
  });

  it('drops values outside the enums instead of sending them', () => {
    const settings = agentSettingsFrom(
      config({
        provider: 'gemini',
        cacheRetention: 'forever',
        'permissions.mode': 'yolo',
        'tools.sandbox': 'maybe',
        'compaction.engine': 'remote',
      }),
    );
    expect(settings).toEqual({});
  });

  it('expands ~ in sessionsDir', () => {
    const home = process.env['HOME'];
    expect(agentSettingsFrom(config({ sessionsDir: '~/ledgers' })).sessionsDir).toBe(`${home}/ledgers`);
  });
});

/** The settings package.json contributes, with their scopes. */
function contributedSettings(): Record<string, { scope?: string; default?: unknown }> {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    contributes: { configuration: { properties: Record<string, { scope?: string; default?: unknown }> } };
  };
  return manifest.contributes.configuration.properties;
}

describe('settings a workspace must not set', () => {
  it('are machine-scoped: a folder\'s .vscode/settings.json cannot redirect the key, loosen the sandbox or run commands', () => {
    const properties = contributedSettings();
    for (const key of [
      'python',
      'baseUrl',
      'apiKeyEnv',
      'tools.sandbox',
      'tools.network',
      'tools.env.pass',
      'mcp.servers',
      'compaction.hooks.before',
      'compaction.hooks.after',
      'compaction.hooks.timeout',
    ]) {
      expect(properties[`agentServer.${key}`]?.scope, key).toBe('machine');
    }
  });
});

/** A reader as VS Code's: package.json's defaults, the user's settings, a workspace's. */
function layered(user: Record<string, unknown>, workspace: Record<string, unknown>): ConfigReader {
  const defaults: Record<string, unknown> = DEFAULTS;
  return {
    get: <T>(key: string) =>
      (key in workspace ? workspace[key] : key in user ? user[key] : defaults[key]) as T | undefined,
    inspect: <T>(key: string) => ({
      defaultValue: defaults[key] as T | undefined,
      globalValue: user[key] as T | undefined,
      workspaceValue: workspace[key] as T | undefined,
    }),
  };
}

describe('settings that carry authority', () => {
  it('are taken from the user\'s settings only: a workspace cannot turn the questions off or move the sessions', () => {
    // Compare CVE-2025-53773: an agent wrote auto-approval into .vscode/settings.json.
    const shipped = { 'permissions.mode': 'allowAll', sessionsDir: '/tmp/repo/.agent' };
    const config = layered({}, shipped);
    const settings = agentSettingsFrom(config);
    expect(settings.permissions?.mode).toBe('allowReads');
    expect(settings.sessionsDir).toBeUndefined();
    expect(ignoredWorkspaceValues(config)).toEqual(['permissions.mode', 'sessionsDir']);
    // What the view shows before a session: the default, not nothing (the e2e's mode picker).
    expect(valueOf(config, 'permissions.mode')).toBe('allowReads');
    expect(valueOf(layered({}, {}), 'permissions.mode')).toBe('allowReads');
  });

  it('are still the user\'s own when the user sets them', () => {
    const config = layered({ 'permissions.mode': 'ask', sessionsDir: '/home/u/ledgers' }, {});
    const settings = agentSettingsFrom(config);
    expect(settings.permissions?.mode).toBe('ask');
    expect(settings.sessionsDir).toBe('/home/u/ledgers');
    expect(ignoredWorkspaceValues(config)).toEqual([]);
  });

  it('leave the other settings to the workspace, as VS Code scopes them', () => {
    const settings = agentSettingsFrom(layered({}, { model: 'claude-haiku-4-5' }));
    expect(settings.model).toBe('claude-haiku-4-5');
  });
});

describe('the sessions folder', () => {
  it('is read from User settings in a remote window too (code-server, SSH, a container), so that every server started finds the same sessions', () => {
    // In a remote window VS Code drops a machine or machine-overridable User setting, but only
    // once it reads settings.json again after the extension's settings are known: a server
    // started before that (a first window) used the folder, one started after (a reload, a
    // restart after a settings change) the default one, where the sessions are not.
    const scope = contributedSettings()['agentServer.sessionsDir']?.scope;
    expect(['application', 'window', 'resource']).toContain(scope);
  });
});

describe('API keys in the server environment', () => {
  const base = { PATH: '/usr/bin', ANTHROPIC_API_KEY: 'from-shell' };

  it('hands stored keys over under their default names, over inherited ones', () => {
    const env = serverEnvironment(base, { provider: 'anthropic' }, { anthropic: 'sk-ant-stored', openai: 'sk-openai' });
    expect(env['ANTHROPIC_API_KEY']).toBe('sk-ant-stored');
    expect(env['OPENAI_API_KEY']).toBe('sk-openai');
    expect(env['PATH']).toBe('/usr/bin');
  });

  it('keeps the inherited key when none is stored', () => {
    expect(serverEnvironment(base, {}, {})['ANTHROPIC_API_KEY']).toBe('from-shell');
  });

  it('also sets apiKeyEnv to the configured provider family key', () => {
    const env = serverEnvironment(base, { provider: 'openai-responses', apiKeyEnv: 'PROXY_KEY' }, { openai: 'sk-o', anthropic: 'sk-a' });
    expect(env['PROXY_KEY']).toBe('sk-o');
    expect(keyVariableFor({ provider: 'openai-responses', apiKeyEnv: 'PROXY_KEY' })).toBe('PROXY_KEY');
    expect(keyVariableFor({ provider: 'openai-chat' })).toBe('OPENAI_API_KEY');
    expect(keyVariableFor({})).toBe('ANTHROPIC_API_KEY');
    expect(keyVariableFor({ provider: 'sim' })).toBeUndefined();
  });

  it('describes which variables carry keys without their values', () => {
    const text = describeKeys({ anthropic: 'sk-ant-secret' }, { provider: 'anthropic', apiKeyEnv: 'X_KEY' });
    expect(text).toContain('ANTHROPIC_API_KEY');
    expect(text).toContain('X_KEY');
    expect(text).not.toContain('sk-ant-secret');
  });
});

describe('restart or notify', () => {
  const only = (...keys: string[]) => (key: string) => keys.includes(key);

  it('restarts for the interpreter and the key variable', () => {
    expect(restartReason(only('python'), {})).toMatch(/interpreter/);
    expect(restartReason(only('apiKeyEnv'), {})).toMatch(/key/);
    expect(restartReason(only('provider'), { apiKeyEnv: 'K' })).toMatch(/provider/);
  });

  it('sends didChangeConfiguration for everything else', () => {
    expect(restartReason(only('provider'), {})).toBeUndefined();
    expect(restartReason(only('model', 'compaction.enabled', 'permissions.mode'), {})).toBeUndefined();
  });
});

describe('MCP settings and secrets', () => {
  it('passes mcp.servers and the timeouts on, and leaves empty ones out', () => {
    const servers = { fs: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '.'] } };
    expect(agentSettingsFrom(config({ ...DEFAULTS, 'mcp.servers': servers, 'mcp.startupTimeout': 10 })).mcp).toEqual({
      servers,
      startupTimeout: 10,
      firstRequestWait: 5,
      toolTimeout: 600,
    });
    expect(agentSettingsFrom(config({ ...DEFAULTS, 'mcp.servers': {} })).mcp?.servers).toBeUndefined();
    expect(agentSettingsFrom(config({ 'mcp.startupTimeout': 0 })).mcp).toBeUndefined();
  });

  it('hands MCP secrets to the server environment; an API key of the same name wins', () => {
    const env = serverEnvironment(
      { PATH: '/bin' },
      {},
      { anthropic: 'sk-ant-stored' },
      { GITHUB_TOKEN: 'ghp_x', ANTHROPIC_API_KEY: 'not-this' },
    );
    expect(env['GITHUB_TOKEN']).toBe('ghp_x');
    expect(env['ANTHROPIC_API_KEY']).toBe('sk-ant-stored');
    expect(env['PATH']).toBe('/bin');
  });
});
