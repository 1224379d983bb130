"""`agent/rewind/changes`' files as the wire carries them: text, or why it is left out."""

from __future__ import annotations

from agent_server.lsp import wire


def test_a_file_then_is_its_text_or_says_why_not() -> None:
    big = b"x" * (wire.MAX_FILE_THEN + 1)
    files = [("a.py", b"print('hi')\n"), ("new.py", None), ("logo.png", b"\x89PNG\r\n\x1a\n\xff"),
             ("dump.txt", big), ("edge.txt", b"y" * wire.MAX_FILE_THEN)]
    out = wire.rewind_changes_json("e1", files)
    assert out["entryId"] == "e1"
    assert out["files"][:4] == [
        {"path": "a.py", "existed": True, "text": "print('hi')\n"},
        {"path": "new.py", "existed": False},
        {"path": "logo.png", "existed": True, "omitted": "binary"},
        {"path": "dump.txt", "existed": True, "omitted": "over 1 MiB"},
    ]
    assert out["files"][4]["text"] == "y" * wire.MAX_FILE_THEN  # at the bound: sent whole
