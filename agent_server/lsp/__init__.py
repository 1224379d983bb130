"""The language server: the editor protocol of docs/protocol.md over pygls (server.py), and the
wire shapes (wire.py)."""
