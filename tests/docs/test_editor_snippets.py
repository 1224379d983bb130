"""README's Zed and eglot snippets, checked as far as this machine can: the Zed settings are
JSON whose command is an absolute path (Zed runs no shell and expands no `~`) with arguments
`agent-server` takes; the eglot entry names the modes agent-server serves, not every
programming mode. (No Zed or Emacs runs here; the Neovim snippet has its own run.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

from agent_server.cli import build_parser

README = Path(__file__).resolve().parents[2] / "README.md"


def section(start: str, end: str) -> str:
    text = README.read_text(encoding="utf-8")
    return text[text.index(start) : text.index(end, text.index(start))]


def test_the_zed_settings_parse_and_run_agent_server_by_its_path() -> None:
    block = re.search(r"```json\n(.*?)```", section("### In Zed", "### In Emacs"), re.S)
    assert block is not None
    server = json.loads(block.group(1))["agent_servers"]["agent-server"]
    assert server["type"] == "custom"
    assert server["command"].startswith("/") and server["command"].endswith(
        "/.venv/bin/agent-server"
    )
    args = build_parser().parse_args(server["args"])
    assert args.command == "acp" and args.provider == "sim"


def test_the_eglot_entry_serves_chosen_modes_only() -> None:
    block = re.search(r"```elisp\n(.*?)```", section("### In Emacs", "## The protocol"), re.S)
    assert block is not None
    elisp = block.group(1)
    assert "prog-mode" not in elisp
    assert "(python-mode python-ts-mode)" in elisp
    assert '.venv/bin/agent-server") "serve")' in elisp
    assert elisp.count("(") == elisp.count(")")
