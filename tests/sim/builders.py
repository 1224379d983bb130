"""What the simulator's tests are built from: test models, tool definitions, a small
scenario and a fake clock."""

from __future__ import annotations

from typing import Any

from agent_server.llm.models import ModelInfo, Pricing
from agent_server.sim.scenario import Scenario, Step, ToolInvocation, Turn

# A model with a small window and a reasoning model, defined here so that tests do not depend
# on the registry's vendor models.
TINY = ModelInfo("test-tiny", "Tiny test model", "sim", 3000, 1000, Pricing(), 1024)
THINKER = ModelInfo("test-thinker", "Reasoning test model", "sim", 200_000, 16_000, Pricing(),
                    1024, reasoning=True)

TOOL_NAMES = ("ls", "read", "grep", "find", "write", "edit", "bash")


def anthropic_tools(names: tuple[str, ...] = TOOL_NAMES) -> list[dict[str, Any]]:
    return [
        {
            "name": name,
            "description": f"The {name} tool.",
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
        }
        for name in names
    ]


def chat_tools(names: tuple[str, ...] = TOOL_NAMES) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": f"The {name} tool.",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
        }
        for name in names
    ]


def responses_tools(names: tuple[str, ...] = TOOL_NAMES) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "name": name,
            "description": f"The {name} tool.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            "strict": False,
        }
        for name in names
    ]


def long_text(tokens: int, word: str = "lorem") -> str:
    """Prose of exactly `tokens` tokens (each ' word' is one token)."""
    return (" " + word) * tokens


TEST_SCENARIO = Scenario(
    name="test",
    turns=(
        Turn(
            user="Read the readme please.",
            steps=(
                Step(text="Listing first.", tools=(ToolInvocation("ls", {"path": "."}),)),
                Step(
                    thinking="Two files at once.",
                    tools=(
                        ToolInvocation("read", {"path": "README.md"}),
                        ToolInvocation("read", {"path": "setup.py"}),
                    ),
                ),
                Step(text="The readme says hello."),
            ),
        ),
        Turn(user="Write a long answer.", steps=(Step(text="Here goes.", text_tokens=400),)),
        Turn(
            user="Think, then answer.",
            steps=(Step(thinking="Let me think about it carefully.", text="Forty-two."),),
        ),
    ),
)


class FakeClock:
    """An injectable clock: seconds since the epoch, moved by hand."""

    def __init__(self, start: float = 1_750_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
