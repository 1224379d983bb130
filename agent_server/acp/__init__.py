"""The Agent Client Protocol front end: `agent-server acp`, for Zed, JetBrains, Neovim, Emacs.

It drives the same agent layer as lsp/ (WorkspaceAgent, AgentSession, their events and
permission gate) through the official Python SDK (`acp`); neither front end imports the other.
`server.py` answers the protocol's requests, `updates.py` turns agent events and ledger
history into session updates, `files.py` lets the file tools use the editor's buffers, and
`transport.py` answers malformed input that the SDK would drop. See docs/acp.md.
"""
