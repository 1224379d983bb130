"""The built-in model simulator: a local HTTP server speaking the Anthropic and OpenAI APIs."""
