"""One home for the settings: the reader reads exactly the keys the settings' description
(agent/settings.py's fields) declares, and the README's table, generated from it, lists each of
them, nothing more."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from agent_server.agent.settings import AgentSettings, settings_from_json, settings_skipping_bad
from agent_server.cli import build_parser
from agent_server.settings_schema import described

ROOT = Path(__file__).resolve().parents[2]
# The objects of the settings: reading one reads the keys inside it.
SECTIONS: dict[str, Any] = {"compaction": {"hooks": {}}, "permissions": {},
            "tools": {"env": {}, "limits": {}, "terminal": {}},
            "mcp": {}}


class Recording(Mapping[str, Any]):
    """A settings object that records every key the reader asks for, by its dotted name."""

    def __init__(self, sections: Mapping[str, Any], prefix: str, read: set[str]) -> None:
        self._sections = sections
        self._prefix = prefix
        self._read = read

    def __getitem__(self, key: str) -> Any:
        self._read.add(self._prefix + key)
        if key in self._sections:
            return Recording(self._sections[key], f"{self._prefix}{key}.", self._read)
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self._read.add(self._prefix + key)
        return key in self._sections

    def __iter__(self) -> Iterator[str]:
        return iter(self._sections)

    def __len__(self) -> int:
        return len(self._sections)


def keys_read() -> set[str]:
    read: set[str] = set()
    settings_from_json(Recording(SECTIONS, "", read))
    sections = {name for name in read if any(k.startswith(name + ".") for k in read)}
    return read - sections


def keys_described() -> set[str]:
    return {one.key for one in described(AgentSettings)}


def keys_documented() -> set[str]:
    readme = (ROOT / "README.md").read_text()
    table = readme.split("\n## Settings\n", 1)[1].split("\n#", 1)[0]
    keys: set[str] = set()
    for line in table.splitlines():
        if not line.startswith("| `"):
            continue
        last = ""
        for key in re.findall(r"`([^`]+)`", line.split(" | ", 1)[0]):
            # `.after` after `compaction.hooks.before` is `compaction.hooks.after`
            last = last.rsplit(".", 1)[0] + key if key.startswith(".") else key
            keys.add(last)
    return keys


def test_the_readme_table_lists_every_key_the_server_reads_and_no_other() -> None:
    read = keys_read()
    assert {"provider", "compaction.hooks.timeout", "tools.limits.memoryMB"} <= read
    assert keys_documented() == read


def test_the_description_has_every_key_the_server_reads_and_no_other() -> None:
    assert keys_described() == keys_read()


def test_the_recording_sees_a_key_added_to_the_reader() -> None:
    # The check above can fail: a key read in a section is recorded under its dotted name.
    read: set[str] = set()
    Recording(SECTIONS, "", read)["tools"].get("brandNew")
    assert "tools.brandNew" in read


def test_settings_skipping_bad_leaves_out_only_the_settings_it_cannot_read() -> None:
    data = {
        "provider": "sim",
        "sessionsDir": "/tmp/s",
        "maxSteps": "many",
        "compaction": {"threshold": "x", "keepRecentTokens": 4000},
        "tools": "none",
    }
    settings, problems = settings_skipping_bad(data)
    assert (settings.provider, settings.sessions_dir) == ("sim", "/tmp/s")
    assert settings.compaction.keep_recent_tokens == 4000
    assert settings.max_steps == AgentSettings().max_steps
    assert settings.compaction.threshold == AgentSettings().compaction.threshold
    assert len(problems) == 3 and "'maxSteps'" in problems[0] and "'tools'" in problems[2]
    assert settings_skipping_bad({"provider": "sim"}) == (settings_from_json({"provider": "sim"}), [])
    assert settings_skipping_bad(None) == (AgentSettings(), [])


def test_a_relative_sessions_dir_is_refused_naming_the_setting() -> None:
    """Issue 44: a relative sessionsDir landed in the folder the server runs in, the
    workspace's in an editor, where a repository's own settings could put it. Left at the
    default (the user data directory), with a problem that names the setting."""
    settings, problems = settings_skipping_bad({"provider": "sim", "sessionsDir": ".agent"})
    assert (settings.provider, settings.sessions_dir) == ("sim", None)
    assert problems == [
        "setting 'sessionsDir' must be an absolute folder (or one starting with ~), not '.agent'"
    ]
    for kept in ("/srv/ledgers", "~/ledgers"):
        assert settings_from_json({"sessionsDir": kept}).sessions_dir == kept


def test_the_command_lines_sessions_dir_is_relative_to_the_current_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    args = build_parser().parse_args(["chat", "--sessions-dir", "ledgers", "hi"])
    assert args.sessions_dir == str(tmp_path / "ledgers")
    assert settings_from_json({"sessionsDir": args.sessions_dir}).sessions_dir == args.sessions_dir
