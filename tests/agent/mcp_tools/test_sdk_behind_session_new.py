"""Issue 48: the first `session/new` with MCP servers took 0.65-0.94 s (10 ms without): making
a session's connections imported the MCP SDK (about 0.6 s of imports). Connections are now
made without it; each connection's task loads it on a thread, behind the answer."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path


def test_making_a_sessions_mcp_connections_imports_no_sdk(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from agent_server.agent.mcp.config import parse_server
        from agent_server.agent.mcp.servers import McpServers

        config = parse_server(
            "files", {{"command": "true"}}, "test", workspace=Path({str(tmp_path)!r}), env={{}}
        )
        servers = McpServers([config], state_dir=Path({str(tmp_path)!r}))
        assert servers.names == ("files",) and servers.status()[0].state == "starting"
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("mcp", "mcp_types"))
        print(loaded)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout
