"""Which models take a thinking level, and whether a change of it re-reads the cached
prefix: each wire API's rule in the provider description (llm/providers.py), as the model
picker, the session and the switch's note read it."""

from __future__ import annotations

import pytest

from agent_server.agent.model_choice import choices
from agent_server.llm.models import ModelInfo, ModelRegistry
from agent_server.llm.providers import PROVIDERS, can_think, thinking_in_prefix

REGISTRY = ModelRegistry()
LOCAL = ModelInfo("llama", "Llama", "local", 32_000, 4096, base_url="http://localhost:8080")


@pytest.mark.parametrize(
    ("provider", "model", "thinks"),
    [
        ("anthropic", REGISTRY.require("claude-sonnet-5-5"), True),  # adaptive, an effort
        ("anthropic", REGISTRY.require("claude-haiku-4-5"), True),  # a budget
        ("sim", REGISTRY.require("sim-small"), True),  # Anthropic's API, a budget
        ("openai-responses", REGISTRY.require("gpt-5.5"), True),  # reasoning.effort
        ("openai-chat", REGISTRY.require("gpt-5.5"), True),  # reasoning_effort
        ("openai-chat", REGISTRY.require("gpt-4.1"), False),  # not a reasoning model
        ("openai-chat", LOCAL, False),  # a local model says nothing of reasoning
    ],
)
def test_a_model_thinks_on_request_where_its_api_can_ask_it(
    provider: str, model: ModelInfo, thinks: bool
) -> None:
    assert can_think(PROVIDERS[provider].api.name, model) is thinks


def test_only_anthropic_caches_messages_per_thinking_level() -> None:
    assert thinking_in_prefix("anthropic-messages")
    assert not thinking_in_prefix("openai-chat")
    assert not thinking_in_prefix("openai-responses")
    assert not thinking_in_prefix("an-api-nobody-speaks")
    assert not can_think("an-api-nobody-speaks", REGISTRY.require("sim-small"))


def test_the_picker_says_which_models_think_on_the_provider() -> None:
    offered = {c.model.id: c.to_json()["thinking"] for c in choices("openai-chat", REGISTRY)}
    assert offered["gpt-5.5"] is True and offered["gpt-4.1"] is False
    assert all(c.to_json()["thinking"] for c in choices("sim", REGISTRY))
