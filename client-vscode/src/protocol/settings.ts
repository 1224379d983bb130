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
  valueLabels?: readonly string[];
  valueTexts?: readonly string[];
  minimum?: number;
  exclusiveMinimum?: number;
  maximum?: number;
  userOnly: boolean;
}

export const EDITOR_SETTINGS: readonly EditorSetting[] = [
  { key: 'provider', kind: 'choice', values: ['anthropic', 'openai-chat', 'openai-responses', 'sim'], valueTexts: ['Anthropic Messages API (ANTHROPIC_API_KEY)', 'OpenAI Chat Completions, or any OpenAI-compatible server (OPENAI_API_KEY)', 'OpenAI Responses API (OPENAI_API_KEY)', 'The built-in simulator: no API key, no network'], userOnly: false },
  { key: 'model', kind: 'string', userOnly: false },
  { key: 'baseUrl', kind: 'string', userOnly: false },
  { key: 'apiKeyEnv', kind: 'string', userOnly: false },
  { key: 'cacheRetention', kind: 'choice', values: ['none', 'short', 'long', 'auto'], valueTexts: ['No prompt caching', '5 minutes', '1 hour (Anthropic) / 24 hours (OpenAI)', 'Short, and long while the window is out of focus or after the user came back past the short lifetime'], userOnly: false },
  { key: 'thinking', kind: 'choice', values: ['off', 'low', 'medium', 'high'], valueTexts: ['No extended thinking (OpenAI: the model\'s default reasoning effort)', 'Anthropic: low effort (adaptive models) or a 4k thinking budget; OpenAI: low reasoning effort', 'Anthropic: medium effort or a 10k budget; OpenAI: medium reasoning effort', 'Anthropic: high effort or a 32k budget; OpenAI: high reasoning effort'], userOnly: false },
  { key: 'compaction.enabled', kind: 'boolean', userOnly: false },
  { key: 'compaction.reserveTokens', kind: 'integer', minimum: 0, userOnly: false },
  { key: 'compaction.keepRecentTokens', kind: 'integer', minimum: 0, userOnly: false },
  { key: 'compaction.model', kind: 'string', userOnly: false },
  { key: 'compaction.threshold', kind: 'number', exclusiveMinimum: 0, userOnly: false },
  { key: 'compaction.hooks.before', kind: 'commands', userOnly: false },
  { key: 'compaction.hooks.after', kind: 'commands', userOnly: false },
  { key: 'compaction.hooks.timeout', kind: 'number', exclusiveMinimum: 0, maximum: 600, userOnly: false },
  { key: 'compaction.engine', kind: 'choice', values: ['local', 'provider'], valueTexts: ['agent-server writes the summaries', 'The provider compacts on its side where it can (Anthropic, OpenAI Responses); agent-server otherwise'], userOnly: false },
  { key: 'compaction.clearToolResults', kind: 'boolean', userOnly: false },
  { key: 'permissions.mode', kind: 'choice', values: ['ask', 'allowReads', 'allowAll'], valueLabels: ['Ask every time', 'Allow reads', 'Allow all'], valueTexts: ['Every tool call asks first, reads too', 'Reads and searches run; writes, edits and commands ask first', 'Nothing asks first (commands still run in the sandbox)'], userOnly: true },
  { key: 'sessionsDir', kind: 'folder', userOnly: true },
  { key: 'tools.sandbox', kind: 'choice', values: ['auto', 'always', 'off'], valueTexts: ['Sandbox every shell command where this machine can; you may let one out when asked', 'Sandbox every shell command, with no way out; without a sandbox none runs', 'Never sandbox shell commands'], userOnly: false },
  { key: 'tools.network', kind: 'boolean', userOnly: false },
  { key: 'tools.env.pass', kind: 'names', userOnly: false },
  { key: 'tools.terminal.visible', kind: 'boolean', userOnly: false },
  { key: 'mcp.servers', kind: 'object', userOnly: false },
  { key: 'mcp.startupTimeout', kind: 'integer', minimum: 1, userOnly: false },
  { key: 'mcp.firstRequestWait', kind: 'integer', minimum: 0, userOnly: false },
  { key: 'mcp.toolTimeout', kind: 'integer', minimum: 1, userOnly: false },
];

/** The values of the setting `key` with their names and meanings, where a user picks
 * one (the permission mode's picker). */
export function choicesOf(key: string): readonly [string, string, string][] {
  const setting = EDITOR_SETTINGS.find((one) => one.key === key);
  return (setting?.values ?? []).map((value, index) => [
    value,
    setting?.valueLabels?.[index] ?? value,
    setting?.valueTexts?.[index] ?? '',
  ]);
}
