"""The model registry and user-defined models from a models file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_server.errors import UnknownModelError
from agent_server.llm.models import (
    BENCHMARK_CLAUDE_MODEL,
    BENCHMARK_GPT_MODEL,
    BUILTIN_MODELS,
    ModelRegistry,
    load_models_file,
)
from agent_server.llm.providers import PROVIDERS


def test_builtin_models_are_consistent() -> None:
    ids = [model.id for model in BUILTIN_MODELS]
    assert len(ids) == len(set(ids))
    for model in BUILTIN_MODELS:
        assert 0 < model.max_output <= model.context_window
        assert model.pricing.input > 0
        assert model.pricing.output > 0
        assert model.pricing.cache_read < model.pricing.input
        if model.vendor in ("anthropic", "sim"):
            assert model.pricing.cache_write_5m == pytest.approx(model.pricing.input * 1.25)
            assert model.pricing.cache_write_1h == pytest.approx(model.pricing.input * 2)
        # OpenAI bills cache writes from GPT-5.6 on, at 1.25x input for 30 minutes; only
        # those models are marked, and only they have write prices.
        if model.vendor == "openai":
            assert model.bills_cache_writes is (model.pricing.cache_write_5m > 0)
            if model.bills_cache_writes:
                assert model.pricing.cache_write_5m == pytest.approx(model.pricing.input * 1.25)
        else:
            assert not model.bills_cache_writes
    registry = ModelRegistry()
    for spec in PROVIDERS.values():
        assert spec.serves(registry.require(spec.default_model))
    assert registry.require("gpt-6.2-sol").bills_cache_writes
    assert not registry.require("gpt-5.5").bills_cache_writes


def test_simulator_models_are_kept() -> None:
    registry = ModelRegistry()
    small, large = registry.require("sim-small"), registry.require("sim-large")
    assert (small.context_window, small.max_output) == (32_768, 4_096)
    assert (large.context_window, large.max_output) == (200_000, 16_384)


def test_benchmark_models() -> None:
    registry = ModelRegistry()
    claude, gpt = registry.require(BENCHMARK_CLAUDE_MODEL), registry.require(BENCHMARK_GPT_MODEL)
    assert claude.vendor == "anthropic"
    assert claude.context_window == 200_000
    assert gpt.vendor == "openai"


def test_unknown_model_lists_the_known_ones() -> None:
    with pytest.raises(UnknownModelError, match="sim-small"):
        ModelRegistry().require("gpt-17")


OLLAMA_YAML = """\
models:
  - id: qwen3-coder:30b
    name: Qwen3 Coder 30B (Ollama)
    baseUrl: http://localhost:11434/v1
    contextWindow: 65536
    maxOutput: 8192
  - id: llama-3.3-70b
    vendor: local
    baseUrl: http://gpu-box:8000/v1
    contextWindow: 131072
    maxOutput: 16384
    images: true
    pricing: {input: 0.2, output: 0.6, cacheRead: 0.02}
"""


def test_load_models_file_yaml(tmp_path: Path) -> None:
    path = tmp_path / "models.yaml"
    path.write_text(OLLAMA_YAML, encoding="utf-8")
    qwen, llama = load_models_file(path)
    assert qwen.id == "qwen3-coder:30b"
    assert qwen.vendor == "local"
    assert qwen.base_url == "http://localhost:11434/v1"
    assert (qwen.context_window, qwen.max_output) == (65_536, 8_192)
    assert qwen.pricing.input == 0.0
    assert llama.images is True
    assert (llama.pricing.input, llama.pricing.output, llama.pricing.cache_read) == (0.2, 0.6, 0.02)
    registry = ModelRegistry()
    registry.add(qwen)
    assert registry.require("qwen3-coder:30b") is qwen


def test_load_models_file_json(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    path.write_text(
        json.dumps({"models": [{"id": "local-model", "contextWindow": 8192, "maxOutput": 1024}]}),
        encoding="utf-8",
    )
    (model,) = load_models_file(path)
    assert model.id == "local-model"
    assert model.base_url is None
    assert not model.bills_cache_writes


def test_a_models_file_marks_a_model_that_bills_cache_writes(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    entry = {"id": "gpt-6-proxy", "vendor": "openai", "contextWindow": 400_000,
             "maxOutput": 32_000, "billsCacheWrites": True,
             "pricing": {"input": 2.0, "cacheWrite5m": 2.5, "cacheWrite1h": 5.0}}
    path.write_text(json.dumps({"models": [entry]}), encoding="utf-8")
    (model,) = load_models_file(path)
    assert model.bills_cache_writes
    assert model.pricing.cache_write_1h == 5.0


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"contextWindow": 1, "maxOutput": 1}, "missing 'id'"),
        ({"id": "m", "contextWindow": "big", "maxOutput": 1}, "contextWindow must be a positive"),
        ({"id": "m", "contextWindow": 100, "maxOutput": 200}, "exceeds contextWindow"),
        ({"id": "m", "contextWindow": 100, "maxOutput": 10, "vendor": "acme"}, "vendor must be"),
        (
            {"id": "m", "contextWindow": 100, "maxOutput": 10, "pricing": {"inptu": 1}},
            "unknown pricing key",
        ),
        (
            {"id": "m", "contextWindow": 100, "maxOutput": 10, "pricing": {"input": -1}},
            "non-negative",
        ),
    ],
)
def test_bad_models_file_names_entry_and_field(
    tmp_path: Path, entry: dict[str, object], message: str
) -> None:
    path = tmp_path / "models.json"
    path.write_text(json.dumps({"models": [entry]}), encoding="utf-8")
    with pytest.raises(ValueError, match=message) as raised:
        load_models_file(path)
    assert "models[0]" in str(raised.value)


def test_unreadable_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot read"):
        load_models_file(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    with pytest.raises(ValueError, match="not a valid models file"):
        load_models_file(broken)
