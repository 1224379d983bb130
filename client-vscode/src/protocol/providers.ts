// Generated from agent_server/llm/providers.py by `make protocol`: do not edit.
// The test suite fails when this file is not what the description gives.

/** The values of the setting `provider`. */
export const PROVIDERS = ['anthropic', 'openai-chat', 'openai-responses', 'sim'] as const;
export type Provider = (typeof PROVIDERS)[number];

/** The provider when the setting is not set. */
export const DEFAULT_PROVIDER: Provider = 'anthropic';

/** The API keys the providers read: one stored secret each, handed to the server under
 * its default variable. `providers`: the providers that read it. */
export const KEY_FAMILIES = {
  anthropic: { label: 'Anthropic', variable: 'ANTHROPIC_API_KEY', providers: ['anthropic'] },
  openai: { label: 'OpenAI', variable: 'OPENAI_API_KEY', providers: ['openai-chat', 'openai-responses'] },
} as const;
export type KeyFamily = keyof typeof KEY_FAMILIES;

/** The key each provider reads (null: it checks none). */
export const PROVIDER_KEYS: Record<Provider, KeyFamily | null> = {
  anthropic: 'anthropic',
  'openai-chat': 'openai',
  'openai-responses': 'openai',
  sim: null,
};
