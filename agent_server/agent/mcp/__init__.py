"""MCP servers as tools: configuration, connections through the official SDK, and the tool
list in force that keeps the prompt prefix byte-stable (see docs/mcp.md).

Only `connection.py` and `tool.py` import the SDK (it takes seconds to load): a session
without servers never loads it.
"""
