"""`agent-server demo` handles every notification the server sends: nothing is left to pygls's
"Ignoring notification for unknown method" warning in the middle of the transcript."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from agent_server.console.demo import DemoClient
from agent_server.console.render import TranscriptPrinter

PROTOCOL = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def server_to_client_methods() -> set[str]:
    """The methods docs/protocol.md says the server sends (notifications and requests)."""
    text = PROTOCOL.read_text(encoding="utf-8")
    start = text.index("## Notifications (server to client)")
    end = text.index("\n## ", text.index("## Requests (server to client)"))
    return set(re.findall(r"^### `([^`]+)`", text[start:end], re.M))


def test_the_demo_client_has_a_handler_for_every_method_the_server_sends() -> None:
    methods = server_to_client_methods()
    assert {"agent/update", "agent/mcp/status", "agent/requestPermission"} <= methods
    client = DemoClient(TranscriptPrinter())
    assert methods - client.methods == set()
    assert {"window/logMessage", "window/showMessage"} <= client.methods


def test_a_demo_run_prints_no_warning(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "agent_server", "demo", "--turns", "1"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "COLUMNS": "100"},
    )
    assert run.returncode == 0, run.stderr
    assert "the session" in run.stdout
    assert "Ignoring notification" not in run.stderr + run.stdout
    assert "WARNING" not in run.stderr, run.stderr
