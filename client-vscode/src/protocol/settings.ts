// Generated from agent_server/agent/settings.py by `make protocol`: do not edit.
// The test suite fails when this file is not what the description gives.

/** How the extension reads a setting (agent_server/settings_schema.py's kinds). */
export type SettingKind =
  | 'boolean'
  | 'integer'
  | 'number'
  | 'string'
  | 'folder'
  | 'choice'
  | 'names'
  | 'commands'
  | 'paths'
  | 'object';

/** A setting the editor offers, under `agentServer.<key>`; `key` is also its dotted
 * place in the server's `agent` section. `userOnly`: carries authority and is read
 * from the user's own settings only (a `machine` one VS Code already keeps so). */
export interface EditorSetting {
  key: string;
  kind: SettingKind;
  values?: readonly string[];
  minimum?: number;
  exclusiveMinimum?: number;
  maximum?: number;
  userOnly: boolean;
}

export const EDITOR_SETTINGS: readonly EditorSetting[] = [
  { key: 'provider', kind: 'choice', values: ['anthropic', 'openai-chat', 'openai-responses', 'sim'], userOnly: false },
  { key: 'model', kind: 'string', userOnly: false },
  { key: 'baseUrl', kind: 'string', userOnly: false },
  { key: 'apiKeyEnv', kind: 'string', userOnly: false },
  { key: 'cacheRetention', kind: 'choice', values: ['none', 'short', 'long', 'auto'], userOnly: false },
  { key: 'thinking', kind: 'choice', values: ['off', 'low', 'medium', 'high'], userOnly: false },
  { key: 'compaction.enabled', kind: 'boolean', userOnly: false },
  { key: 'compaction.reserveTokens', kind: 'integer', minimum: 0, userOnly: false },
  { key: 'compaction.keepRecentTokens', kind: 'integer', minimum: 0, userOnly: false },
  { key: 'compaction.model', kind: 'string', userOnly: false },
  { key: 'compaction.threshold', kind: 'number', exclusiveMinimum: 0, userOnly: false },
  { key: 'compaction.hooks.before', kind: 'commands', userOnly: false },
  { key: 'compaction.hooks.after', kind: 'commands', userOnly: false },
  { key: 'compaction.hooks.timeout', kind: 'number', exclusiveMinimum: 0, maximum: 600, userOnly: false },
  { key: 'compaction.engine', kind: 'choice', values: ['local', 'provider'], userOnly: false },
  { key: 'compaction.clearToolResults', kind: 'boolean', userOnly: false },
  { key: 'permissions.mode', kind: 'choice', values: ['ask', 'allowReads', 'allowAll'], userOnly: true },
  { key: 'sessionsDir', kind: 'folder', userOnly: true },
  { key: 'tools.sandbox', kind: 'choice', values: ['auto', 'always', 'off'], userOnly: false },
  { key: 'tools.network', kind: 'boolean', userOnly: false },
  { key: 'tools.env.pass', kind: 'names', userOnly: false },
  { key: 'mcp.servers', kind: 'object', userOnly: false },
  { key: 'mcp.startupTimeout', kind: 'integer', minimum: 1, userOnly: false },
  { key: 'mcp.toolTimeout', kind: 'integer', minimum: 1, userOnly: false },
];
