"""agent-server: a language server that runs coding-agent sessions for editors."""

__version__ = "0.1.0"
