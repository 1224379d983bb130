"""The permission question for clients without agent/requestPermission: a plain message that
shows the whole command or the change, literally."""

from __future__ import annotations

from agent_server.agent.permissions import PermissionRequest, options_for
from agent_server.agent.tools import default_tools
from agent_server.agent.tools.diff import FileChange
from agent_server.llm.messages import ToolCall
from agent_server.lsp.server import permission_message

TOOLS = {tool.spec.name: tool for tool in default_tools()}


def test_a_multi_line_command_is_shown_whole_with_its_escapes_named() -> None:
    command = "ls\nrm -rf ~ \x1b[8m\u202e"
    call = ToolCall("c", "bash", {"command": command})
    request = PermissionRequest(
        call, TOOLS["bash"], "Run: ls …", options_for(TOOLS["bash"], call), command=command
    )
    message = permission_message(request)
    assert "rm -rf ~ \\x1b[8m\\u202e" in message
    assert "\x1b" not in message and "\u202e" not in message


def test_a_file_change_is_shown_as_a_diff() -> None:
    call = ToolCall("c", "edit", {"path": "a.py"})
    change = FileChange("a.py", "x = 1\n", "x = 2\n")
    request = PermissionRequest(
        call, TOOLS["edit"], "Edit a.py", options_for(TOOLS["edit"], call), change=change
    )
    assert "-x = 1\n+x = 2\n" in permission_message(request)
