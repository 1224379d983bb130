"""The built-in model simulator: a local HTTP server speaking the Anthropic and OpenAI APIs.

See docs/simulator.md. Entry points: `simulator.Simulator` (state and ASGI app),
`server.SimServer` (serve it in process, async or on a thread; `server.run_cli` for
`agent-server sim`), `scenario` (what it answers), `faults` (what goes wrong), `tokenizer`
(how tokens are counted), `workspace.write_sample_workspace` (what the default scenario
explores). The package imports nothing heavy itself, so that `tokenizer` stays cheap to use.
"""
