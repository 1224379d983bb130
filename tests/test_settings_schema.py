"""The settings' one description (agent_server/settings_schema.py): a setting is one field,
and its reading, bounds, unknown keys and what the editor and the README show come from it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest

from agent_server.agent.settings import AgentSettings
from agent_server.errors import ConfigError
from agent_server.lsp import settings_out
from agent_server.settings_schema import check, described, read, root, setting, unknown_keys


@dataclass(frozen=True, slots=True)
class Inner:
    depth: int = setting(3, "How deep.", minimum=1, maximum=9)
    names: tuple[str, ...] = setting((), "Variables.", items="names", name="env.pass")

    def __post_init__(self) -> None:
        check(self)


@root
@dataclass(frozen=True, slots=True)
class Outer:
    colour: Literal["red", "blue"] = setting("red", "Which.", editor="window")
    label: str | None = setting(None, "A label.", default_text="none")
    share: float | None = setting(None, "A share.", exclusive_minimum=0, maximum=1)
    extra: Mapping[str, Any] = setting({}, "Anything.", authority=True, editor="machine")
    inner: Inner = field(default_factory=Inner)

    def __post_init__(self) -> None:
        check(self)


def test_a_setting_is_one_field_read_by_its_dotted_name() -> None:
    assert [one.key for one in described(Outer)] == [
        "colour", "label", "share", "extra", "inner.depth", "inner.env.pass",
    ]
    got = read(Outer, {"colour": "blue", "label": "x", "inner": {"depth": 4, "env": {"pass": ["A"]}}}, Outer())
    assert got == Outer(colour="blue", label="x", inner=Inner(depth=4, names=("A",)))
    # null where null is a value sets it; elsewhere it keeps the value in force
    assert read(Outer, {"label": None, "colour": None}, got) == Outer(colour="blue", inner=got.inner)
    assert read(Outer, {"extra": None}, Outer(extra={"a": 1})).extra == {}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"colour": "green"}, "setting 'colour' must be one of red, blue, not 'green'"),
        ({"share": 0}, "setting 'share' must be above 0, not 0"),
        ({"share": 1.5}, "setting 'share' must be at most 1, not 1.5"),
        ({"inner": {"depth": 2.5}}, "setting 'inner.depth' must be a whole number, not 2.5"),
        ({"inner": {"depth": 0}}, "setting 'inner.depth' must be at least 1, not 0"),
        ({"inner": {"env": 3}}, "setting 'inner.env' must be an object"),
        ({"inner": {"env": {"pass": ["", "B"]}}}, "must be a list of variable names"),
        ({"inner": []}, "setting 'inner' must be an object"),
        ({"extra": [1]}, "setting 'extra' must be an object, not [1]"),
    ],
)
def test_a_bad_value_is_refused_naming_the_key(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace(".", r"\.")):
        read(Outer, data, Outer())


def test_settings_made_in_code_are_held_to_the_same_bounds_named_from_the_root() -> None:
    with pytest.raises(ConfigError, match=r"setting 'inner\.depth' must be at most 9, not 10"):
        Inner(depth=10)
    with pytest.raises(ConfigError, match="setting 'colour' must be one of red, blue"):
        Outer(colour="green")  # type: ignore[arg-type]


def test_unknown_keys_are_named_dotted_and_free_form_values_are_not_looked_into() -> None:
    data = {"colour": "red", "colur": 1, "inner": {"env": {"pas": []}}, "extra": {"any": 1}}
    assert unknown_keys(Outer, data) == ["colur", "inner.env.pas"]


def test_every_setting_says_what_it_means_and_a_worked_out_default_in_words() -> None:
    for one in described(AgentSettings):
        assert one.spec.description.strip(), one.key
        if one.default is None:
            assert one.spec.default_text, f"{one.key}: a None default needs default_text"
        if one.spec.value_texts:
            assert len(one.spec.value_texts) == len(one.values), one.key


def test_the_editor_never_takes_a_setting_that_carries_authority_from_a_workspace() -> None:
    """Each one the editor offers is machine-scoped (VS Code never reads it from a workspace)
    or in the extension's user-only list (settings.ts `userOnly`)."""
    table = settings_out.settings_ts("")
    for one in settings_out.offered():
        if one.spec.authority and one.spec.editor != "machine":
            assert f"key: '{one.key}'" in table
            line = next(x for x in table.splitlines() if f"key: '{one.key}'" in x)
            assert "userOnly: true" in line, one.key
    properties = settings_out.editor_properties({})
    assert properties["agentServer.baseUrl"]["scope"] == "machine"
    assert settings_out.USER_ONLY in properties["agentServer.permissions.mode"]["markdownDescription"]
