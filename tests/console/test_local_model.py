"""A model only a local OpenAI-compatible server knows (`--model qwen2.5-coder:7b` with
`--base-url`), and a models file named on the command line, as README's local-model example
uses them."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from agent_server.agent.config_file import flag_overrides, resolve_settings
from agent_server.agent.model_setup import connect
from agent_server.cli import build_parser
from agent_server.errors import UnknownModelError


def settings_of(*argv: str):  # type: ignore[no-untyped-def]
    args: argparse.Namespace = build_parser().parse_args(["chat", *argv])
    return resolve_settings(None, flag_overrides(args))


def test_a_model_the_server_knows_is_taken_with_the_window_given() -> None:
    settings = settings_of("--provider", "openai-chat", "--base-url", "http://localhost:11434/v1",
                           "--model", "qwen2.5-coder:7b", "--context-window", "16384")
    setup = connect(settings)
    assert setup.model.id == "qwen2.5-coder:7b"
    assert setup.model.context_window == 16384
    assert setup.model.vendor == "local"
    assert setup.model.base_url == "http://localhost:11434/v1"


def test_without_a_window_it_assumes_32k() -> None:
    settings = settings_of("--provider", "openai-chat", "--base-url", "http://localhost:8080/v1",
                           "--model", "my-gguf")
    assert connect(settings).model.context_window == 32768


def test_without_a_base_url_an_unknown_model_is_still_refused_and_says_what_to_do() -> None:
    settings = settings_of("--provider", "openai-chat", "--model", "gpt-typo")
    with pytest.raises(UnknownModelError, match="--base-url"):
        connect(settings, env={"OPENAI_API_KEY": "x"})


def test_models_file_flag(tmp_path: Path) -> None:
    models = tmp_path / "models.json"
    models.write_text(json.dumps({"models": [
        {"id": "coder", "contextWindow": 65536, "maxOutput": 8192, "baseUrl": "http://localhost:11434/v1"}
    ]}))
    settings = settings_of("--provider", "openai-chat", "--models-file", str(models), "--model", "coder")
    assert connect(settings).model.context_window == 65536
