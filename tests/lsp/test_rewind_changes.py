"""`agent/rewind/changes`' files as the wire carries them: text, or why it is left out."""

from __future__ import annotations

from agent_server.agent.rewind import FileThen
from agent_server.lsp import wire


def test_a_file_then_is_its_text_or_says_why_not() -> None:
    bound = wire.MAX_FILE_THEN
    files = [FileThen("a.py", 12, b"print('hi')\n"), FileThen("new.py", None, None),
             FileThen("logo.png", 9, b"\x89PNG\r\n\x1a\n\xff"),
             FileThen("dump.txt", bound + 1, None),  # over the bound: never read
             FileThen("edge.txt", bound, b"y" * bound)]
    out = wire.rewind_changes_json("e1", files)
    assert out["entryId"] == "e1"
    assert out["files"][:4] == [
        {"path": "a.py", "existed": True, "text": "print('hi')\n"},
        {"path": "new.py", "existed": False},
        {"path": "logo.png", "existed": True, "omitted": "binary"},
        {"path": "dump.txt", "existed": True, "omitted": "over 1 MiB"},
    ]
    assert out["files"][4]["text"] == "y" * bound  # at the bound: sent whole
