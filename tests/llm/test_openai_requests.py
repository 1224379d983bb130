"""OpenAI Chat Completions and Responses request building."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace

import pytest

from agent_server.llm import openai_chat, openai_responses
from agent_server.llm.messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
)
from agent_server.llm.models import ModelInfo, ModelRegistry
from agent_server.llm.stream import CallOptions
from tests.llm.builders import (
    SYSTEM,
    assistant,
    call,
    context,
    dumps,
    growing_conversation,
    result,
    user,
)

GPT = ModelRegistry().require("gpt-5.5")
LOCAL = ModelInfo(
    "qwen3-coder:30b", "Qwen3 Coder", "local", 65_536, 8_192, base_url="http://localhost:11434/v1"
)
OPTIONS = CallOptions(session_id="session-42")

BUILDERS = [openai_chat.build_request, openai_responses.build_request]


@pytest.mark.parametrize("build", BUILDERS)
def test_prompt_cache_key_is_the_session_id(build: object) -> None:
    params = build(GPT, context([user("hi")]), OPTIONS)  # type: ignore[operator]
    assert params["prompt_cache_key"] == "session-42"
    assert "prompt_cache_retention" not in params


@pytest.mark.parametrize("build", BUILDERS)
def test_long_retention_asks_for_extended_caching(build: object) -> None:
    options = CallOptions(session_id="s", cache_retention="long")
    params = build(GPT, context([user("hi")]), options)  # type: ignore[operator]
    assert params["prompt_cache_retention"] == "24h"


@pytest.mark.parametrize("build", BUILDERS)
@pytest.mark.parametrize(
    "options",
    [
        CallOptions(session_id="s", cache_retention="none"),
        CallOptions(session_id="s", cache="none"),
    ],
)
def test_no_caching_sends_no_cache_fields(build: object, options: CallOptions) -> None:
    params = build(GPT, context([user("hi")]), options)  # type: ignore[operator]
    assert "prompt_cache_key" not in params
    assert "prompt_cache_retention" not in params


WRITER = ModelRegistry().require("gpt-6.2-sol")  # GPT-5.6 and later: bills cache writes


@pytest.mark.parametrize(
    ("build", "retention", "ttl"),
    [
        (openai_chat.build_request, "short", "30m"),
        (openai_chat.build_request, "long", "30m"),  # Chat Completions keeps 30m only
        (openai_responses.build_request, "short", "30m"),
        (openai_responses.build_request, "long", "12h"),
    ],
)
def test_gpt_5_6_and_later_get_prompt_cache_options_never_retention(
    build: object, retention: str, ttl: str
) -> None:
    options = CallOptions(session_id="s", cache_retention=retention)  # type: ignore[arg-type]
    params = build(WRITER, context([user("hi")]), options)  # type: ignore[operator]
    assert params["prompt_cache_key"] == "s"
    assert params["prompt_cache_options"] == {"ttl": ttl}
    assert "prompt_cache_retention" not in params


@pytest.mark.parametrize("build", BUILDERS)
@pytest.mark.parametrize(
    "options",
    [
        CallOptions(session_id="s", cache_retention="none"),
        CallOptions(session_id="s", cache="none"),
    ],
)
def test_no_caching_on_a_model_that_bills_writes_turns_caching_off(
    build: object, options: CallOptions
) -> None:
    # Explicit mode with no breakpoint caches nothing, so nothing is written and billed.
    params = build(WRITER, context([user("hi")]), options)  # type: ignore[operator]
    assert params["prompt_cache_options"] == {"mode": "explicit"}
    assert "prompt_cache_key" not in params
    assert "prompt_cache_retention" not in params


@pytest.mark.parametrize("build", BUILDERS)
def test_older_models_never_get_prompt_cache_options(build: object) -> None:
    for retention in ("none", "short", "long"):
        options = CallOptions(session_id="s", cache_retention=retention)  # type: ignore[arg-type]
        assert "prompt_cache_options" not in build(GPT, context([user("hi")]), options)  # type: ignore[operator]


@pytest.mark.parametrize("build", BUILDERS)
def test_a_local_server_gets_no_openai_only_fields(build: object) -> None:
    options = CallOptions(session_id="s", cache_retention="long")
    params = build(LOCAL, context([user("hi")]), options)  # type: ignore[operator]
    assert "prompt_cache_key" not in params
    assert "prompt_cache_retention" not in params
    assert "prompt_cache_options" not in params
    local_writer = replace(LOCAL, bills_cache_writes=True)
    assert "prompt_cache_options" not in build(local_writer, context([user("hi")]), options)  # type: ignore[operator]


def test_chat_request_shape() -> None:
    messages = [user("go"), assistant(call("a", "bash", command="ls")), result("a", "file.txt")]
    params = openai_chat.build_request(GPT, context(messages), OPTIONS)
    assert params["stream"] is True
    assert params["stream_options"] == {"include_usage": True}
    assert params["max_completion_tokens"] == GPT.max_output
    assert params["tools"][0] == {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read a file of the workspace.",
            "parameters": context([]).tools[0].parameters,
        },
    }
    assert params["messages"] == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "a",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command":"ls"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": "file.txt"},
    ]
    assert list(params)[-1] == "messages"


def test_chat_local_server_uses_max_tokens() -> None:
    params = openai_chat.build_request(LOCAL, context([user("hi")]), OPTIONS)
    assert params["max_tokens"] == LOCAL.max_output
    assert "max_completion_tokens" not in params


def test_chat_images_from_tools_follow_in_a_user_message() -> None:
    image = ImageContent("aGk=", "image/png")
    messages = [
        user("look"),
        assistant(call("a")),
        ToolResultMessage("a", "read", (TextContent("a screenshot"), image)),
    ]
    tail = openai_chat.build_request(GPT, context(messages), OPTIONS)["messages"][-2:]
    assert tail == [
        {"role": "tool", "tool_call_id": "a", "content": "a screenshot"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Images returned by the tools above:"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGk="}},
            ],
        },
    ]


def test_responses_request_shape() -> None:
    messages = [
        user("go"),
        assistant(call("a", "bash", command="ls"), text="Listing."),
        result("a", "file.txt"),
    ]
    params = openai_responses.build_request(GPT, context(messages), OPTIONS)
    assert params["store"] is False
    assert params["instructions"] == SYSTEM
    assert params["include"] == ["reasoning.encrypted_content"]
    assert params["max_output_tokens"] == GPT.max_output
    assert params["tools"][1] == {
        "type": "function",
        "name": "bash",
        "description": "Run a shell command.",
        "parameters": context([]).tools[1].parameters,
        "strict": False,
    }
    assert params["input"] == [
        {"role": "user", "content": [{"type": "input_text", "text": "go"}]},
        {"role": "assistant", "content": "Listing."},
        {"type": "function_call", "call_id": "a", "name": "bash", "arguments": '{"command":"ls"}'},
        {"type": "function_call_output", "call_id": "a", "output": "file.txt"},
    ]
    assert list(params)[-1] == "input"


def test_responses_reasoning_items_go_back_inline() -> None:
    item = {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "gAAAA"}
    signature = json.dumps(item, sort_keys=True)
    answer = AssistantMessage(
        (ThinkingContent("", signature=signature), TextContent("ok")),
        "stop",
        api="openai-responses",
    )
    anthropic_answer = AssistantMessage(
        (ThinkingContent("hmm", signature="anthropic-sig"), TextContent("ok")),
        "stop",
        api="anthropic-messages",
    )
    params = openai_responses.build_request(
        GPT, context([user("q"), answer, user("q2"), anthropic_answer, user("q3")]), OPTIONS
    )
    assert params["input"][1] == item
    assert params["input"][4] == {"role": "assistant", "content": "ok"}  # foreign thinking dropped


@pytest.mark.parametrize("build", BUILDERS)
def test_same_bytes_whatever_the_argument_key_order(build: object) -> None:
    def history(arguments: dict[str, object]) -> list[object]:
        return [user("edit"), assistant(ToolCall("a", "edit", arguments)), result("a", name="edit")]

    first = {"path": "a.py", "old": "x", "new": "y", "more": {"z": 1, "a": 2}}
    second = {"more": {"a": 2, "z": 1}, "new": "y", "path": "a.py", "old": "x"}
    one = dumps(build(GPT, context(history(first)), OPTIONS))  # type: ignore[operator,arg-type]
    two = dumps(build(GPT, context(history(second)), OPTIONS))  # type: ignore[operator,arg-type]
    assert one == two


@pytest.mark.parametrize("build", BUILDERS)
def test_request_n_plus_1_begins_with_request_n(build: object) -> None:
    requests = growing_conversation(steps=8, parallel_at=3, parallel=15)
    bodies = [dumps(build(GPT, context(messages), OPTIONS)) for messages in requests]  # type: ignore[operator]
    for before, after in itertools.pairwise(bodies):
        assert before.endswith("]}")
        assert after.startswith(before[:-2])


def test_reasoning_effort_goes_to_reasoning_models_only() -> None:
    gpt = ModelRegistry().require("gpt-5.5")
    ctx = context([user("hi")])
    off = openai_responses.build_request(gpt, ctx, CallOptions(session_id="s"))
    assert off["reasoning"] == {"summary": "auto"}  # as before: the model's default effort
    high = openai_responses.build_request(gpt, ctx, CallOptions(session_id="s", thinking="high"))
    assert high["reasoning"] == {"effort": "high", "summary": "auto"}
    chat = openai_chat.build_request(gpt, ctx, CallOptions(session_id="s", thinking="low"))
    assert chat["reasoning_effort"] == "low"
    assert "reasoning_effort" not in openai_chat.build_request(gpt, ctx, CallOptions())
    older = ModelRegistry().require("gpt-4.1")
    for build in (openai_chat.build_request, openai_responses.build_request):
        params = build(older, ctx, CallOptions(session_id="s", thinking="high"))
        assert "reasoning" not in params and "reasoning_effort" not in params
