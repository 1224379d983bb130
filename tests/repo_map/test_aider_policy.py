"""Aider's repository map as a benchmark strategy (benchmarks/strategies.py, AiderMapPolicy):
where the map goes, what steers it, when it is drawn again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_server.agent.context_manager import ContextManager
from agent_server.agent.events import ignore_events
from agent_server.agent.session_config import FixedConfig
from agent_server.agent.tools import default_tools
from agent_server.context.trigger import CompactionSettings
from agent_server.llm.messages import (
    AssistantMessage,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from agent_server.llm.models import BUILTIN_MODELS
from agent_server.repo_map import available
from agent_server.session.ledger import Ledger
from benchmarks.strategies import (
    AIDER_MAP_PREFIX,
    AIDER_MAP_REPLY,
    AiderMapPolicy,
    current_message_text,
    files_in_chat,
)
from tests.repo_map.fixture import write_shop

pytestmark = pytest.mark.skipif(not available(), reason="the repomap extra is not installed")

SIM_SMALL = next(m for m in BUILTIN_MODELS if m.id == "sim-small")


async def _no_call(*_args: object) -> AssistantMessage:
    raise AssertionError("no model call: these histories are far below the window")


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[ContextManager]:
    write_shop(tmp_path / "ws")
    # Enough other code that Aider's budget (4,096 tokens on sim-small's window) leaves some out.
    for module in range(40):
        functions = "".join(
            f"def step_{module}_{n}(records, threshold, *, strict=False):\n"
            f"    return step_{module}_{(n + 1) % 8}(records, threshold)\n\n\n"
            for n in range(8))
        path = tmp_path / "ws" / "pipeline" / f"stage_{module}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(functions, encoding="utf-8")
    with Ledger.create(tmp_path / "s.jsonl", session_id="s", workspace=str(tmp_path / "ws"),
                       fsync="never") as ledger:
        yield ContextManager(
            ledger=ledger, system_prompt="You are a coding agent.",
            tools=tuple(tool.spec for tool in default_tools()),
            config=FixedConfig(SIM_SMALL, SIM_SMALL, CompactionSettings()),
            call=_no_call, emit=ignore_events,
        )


def read_step(number: int, path: str, text: str = "...") -> list[Message]:
    call = ToolCall(f"call_{number}", "read", {"path": path})
    return [AssistantMessage((TextContent(""), call), "toolUse", usage=Usage(input=1, output=1)),
            ToolResultMessage(call.id, "read", (TextContent(text),))]


def text_of(message: Message) -> str:
    assert isinstance(message, UserMessage) and isinstance(message.content[0], TextContent)
    assert message.content[0].text.startswith(AIDER_MAP_PREFIX)
    return message.content[0].text


async def sent(policy: AiderMapPolicy, manager: ContextManager,
               history: list[Message]) -> tuple[Message, ...]:
    return (await policy.prepare(manager.view_of(history), manager)).messages


async def test_the_map_goes_before_the_history_and_leaves_out_the_chat_files(
    manager: ContextManager,
) -> None:
    history = [UserMessage.of_text("Why is the price wrong?"),
               *read_step(1, "shop/pricing.py")]
    messages = await sent(AiderMapPolicy(), manager, history)
    head, reply = messages[0], messages[1]
    assert isinstance(reply, AssistantMessage) and reply.text == AIDER_MAP_REPLY
    assert messages[2:] == tuple(history)
    listing = text_of(head).removeprefix(AIDER_MAP_PREFIX)
    # What the chat file calls is on the map; the chat file itself is not (its text is there).
    assert "def compute_tax" in listing and "def order_total" in listing
    assert "shop/pricing.py" not in listing


async def test_auto_redraws_for_each_message_files_only_when_the_chat_files_change(
    manager: ContextManager,
) -> None:
    first = [UserMessage.of_text("Look at the shop."), *read_step(1, "shop/cli.py")]
    auto, files = AiderMapPolicy(), AiderMapPolicy(refresh="files", name="aider-map-files")
    shown = text_of((await sent(auto, manager, first))[0])
    left_out = [f"step_{m}_{n}" for m in range(40) for n in range(8)
                if f"def step_{m}_{n}(" not in shown]
    assert left_out, "the budget leaves some definitions out"
    name = left_out[-1]
    # The next message mentions one of them: Aider's ranking weighs mentioned names.
    second = [*first, UserMessage.of_text(f"Does {name} drop records?")]
    third = [*second, *read_step(2, "shop/reports.py")]
    heads_auto = [text_of((await sent(auto, manager, h))[0]) for h in (first, second, third)]
    heads_files = [text_of((await sent(files, manager, h))[0]) for h in (first, second, third)]
    assert f"def {name}(" in heads_auto[1]  # drawn again for the new message
    assert heads_files[1] == heads_files[0]  # the same chat files: the same map, cache kept
    assert heads_files[2] != heads_files[1]  # a new chat file: drawn again
    assert heads_auto[2] == heads_files[2]


def test_files_in_chat_and_the_current_message() -> None:
    failed = ToolCall("call_9", "read", {"path": "nope.py"})
    history: list[Message] = [
        UserMessage.of_text("old prompt"), *read_step(1, "./shop/tax.py", "RATES = {}"),
        UserMessage.of_text("new prompt about final_price"),
        *read_step(2, "shop/cli.py", "def main(argv):"),
        AssistantMessage((TextContent("trying"), failed), "toolUse"),
        ToolResultMessage(failed.id, "read", (TextContent("no such file"),), is_error=True),
    ]
    assert files_in_chat(history) == {"shop/tax.py", "shop/cli.py"}
    text = current_message_text(history)
    assert "new prompt about final_price" in text and "old prompt" not in text
    assert "def main" not in text  # a file's text is the chat files' chunk, not the message
    assert "no such file" not in text  # a failed read is a file tool's result too
