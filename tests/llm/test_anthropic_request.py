"""Anthropic request building: cache breakpoints, retention, merging, determinism, prefixes."""

from __future__ import annotations

import itertools
import json

import pytest

from agent_server.llm.anthropic import LOOKBACK_BLOCKS, MAX_BREAKPOINTS, build_request
from agent_server.llm.messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from agent_server.llm.models import ModelRegistry
from agent_server.llm.stream import CallOptions
from tests.llm.builders import (
    assistant,
    cache_marks,
    cache_ttls,
    call,
    context,
    dumps,
    growing_conversation,
    result,
    strip_cache_control,
    user,
)

MODEL = ModelRegistry().require("sim-large")
SHORT = CallOptions(session_id="s1")


def test_three_breakpoints_last_tool_end_of_system_last_user_block() -> None:
    params = build_request(MODEL, context([user("hi"), assistant(call("a")), result("a")]), SHORT)
    assert cache_marks(params) == ["tools[2]", "system[0]", "messages[2][0]"]
    assert params["tools"][2]["cache_control"] == {"type": "ephemeral"}
    assert params["system"] == [
        {"type": "text", "text": context([]).system_prompt, "cache_control": {"type": "ephemeral"}}
    ]


def test_the_message_breakpoint_follows_the_last_user_message() -> None:
    messages = [user("one"), assistant(text="answer"), user("two")]
    assert cache_marks(build_request(MODEL, context(messages), SHORT))[-1] == "messages[2][0]"
    # While the model's answer is the last message, the mark stays on the user message.
    messages.append(assistant(text="answer two"))
    assert cache_marks(build_request(MODEL, context(messages), SHORT))[-1] == "messages[2][0]"


def test_a_request_that_writes_no_tail_keeps_the_previous_breakpoint_only() -> None:
    """A summary request: it reads what the previous request cached and writes nothing."""
    messages = [user("one"), assistant(call("a")), result("a"), assistant(call("b")), result("b")]
    no_tail = CallOptions(session_id="s1", cache="read")
    normal = cache_marks(build_request(MODEL, context(messages), SHORT))
    assert normal[-1] == "messages[4][0]"
    marks = cache_marks(build_request(MODEL, context(messages), no_tail))
    assert marks == ["tools[2]", "system[0]", "messages[2][0]"]  # where the previous one was
    # Nothing answered yet: there is no earlier breakpoint to read, and none is written.
    assert cache_marks(build_request(MODEL, context([user("one")]), no_tail))[-1] == "system[0]"


def test_a_request_extending_the_previous_one_reads_all_of_it_and_writes_nothing() -> None:
    """A summary request cut where the previous request ended, plus its instruction: the
    breakpoint is on the previous request's last block, the instruction after it is new."""
    previous = [user("one"), assistant(call("a")), result("a")]
    sent = cache_marks(build_request(MODEL, context(previous), SHORT))
    assert sent[-1] == "messages[2][0]"
    summary = [*previous, user("<summary request>")]
    extend = CallOptions(session_id="s1", cache="extend")
    params = build_request(MODEL, context(summary), extend)
    assert [b["type"] for b in params["messages"][2]["content"]] == ["tool_result", "text"]
    assert cache_marks(params) == ["tools[2]", "system[0]", "messages[2][0]"]
    # The same request with "read" would leave the previous step's result unread.
    read = cache_marks(build_request(MODEL, context(summary), CallOptions(cache="read")))
    assert read[-1] == "messages[0][0]"


def test_without_tools_there_are_two_breakpoints() -> None:
    params = build_request(MODEL, context([user("hi")], tools=()), SHORT)
    assert "tools" not in params
    assert cache_marks(params) == ["system[0]", "messages[0][0]"]


def test_tool_results_and_the_following_user_message_are_one_user_message() -> None:
    messages = [
        user("go"),
        assistant(call("a"), call("b")),
        result("a"),
        result("b"),
        user("also note: the file changed on disk"),
    ]
    params = build_request(MODEL, context(messages), SHORT)
    assert [m["role"] for m in params["messages"]] == ["user", "assistant", "user"]
    merged = params["messages"][2]["content"]
    assert [b["type"] for b in merged] == ["tool_result", "tool_result", "text"]
    assert [b.get("tool_use_id") for b in merged[:2]] == ["a", "b"]
    # The breakpoint is on the last block of the merged message, and only there.
    assert cache_marks(params)[2:] == ["messages[2][2]"]


@pytest.mark.parametrize(("calls", "fourth"), [(10, False), (11, True), (15, True)])
def test_fourth_breakpoint_only_when_a_step_outruns_the_lookback(calls: int, fourth: bool) -> None:
    # Without text, one step adds `calls` tool_use blocks and `calls` tool_result blocks:
    # the new breakpoint lies 2*calls blocks after the previous one.
    tool_calls = [call(f"c{i}") for i in range(calls)]
    messages = [
        user("read everything"),
        assistant(*tool_calls),
        *[result(c.id) for c in tool_calls],
    ]
    marks = cache_marks(build_request(MODEL, context(messages), SHORT))
    last = f"messages[2][{calls - 1}]"
    expected = (
        ["tools[2]", "system[0]", "messages[0][0]", last]
        if fourth
        else ["tools[2]", "system[0]", last]
    )
    assert marks == expected
    assert (2 * calls > LOOKBACK_BLOCKS) is fourth


def test_fourth_breakpoint_sits_where_the_previous_request_put_its_message_breakpoint() -> None:
    requests = growing_conversation(steps=6, parallel_at=4, parallel=15)
    previous = build_request(MODEL, context(requests[3]), SHORT)
    current = build_request(MODEL, context(requests[4]), SHORT)
    previous_mark = cache_marks(previous)[-1]
    current_marks = cache_marks(current)
    assert len(current_marks) == 4
    assert current_marks[2] == previous_mark
    # The request after it adds few blocks again: back to three.
    after = build_request(MODEL, context(requests[5]), SHORT)
    assert len(cache_marks(after)) == 3


def test_never_more_than_four_breakpoints() -> None:
    for parallel_at in (1, 2, 4):
        for messages in growing_conversation(steps=8, parallel_at=parallel_at, parallel=30):
            params = build_request(MODEL, context(messages), SHORT)
            assert len(cache_marks(params)) <= MAX_BREAKPOINTS


@pytest.mark.parametrize(
    ("options", "mark"),
    [
        (CallOptions(cache_retention="short"), {"type": "ephemeral"}),
        (CallOptions(cache_retention="long"), {"type": "ephemeral", "ttl": "1h"}),
        (CallOptions(cache_retention="none"), None),
        (CallOptions(cache_retention="long", cache="none"), None),
    ],
)
def test_retention_modes(options: CallOptions, mark: dict[str, str] | None) -> None:
    params = build_request(MODEL, context([user("hi"), assistant(call("a")), result("a")]), options)
    text = json.dumps(params)
    if mark is None:
        assert "cache_control" not in text
    else:
        assert params["system"][0]["cache_control"] == mark
        assert params["tools"][-1]["cache_control"] == mark
        assert params["messages"][-1]["content"][-1]["cache_control"] == mark
        assert text.count('"cache_control"') == 3


def test_thinking_goes_back_with_its_signature() -> None:
    signed = ThinkingContent("let me look", signature="sig-1")
    redacted = ThinkingContent("", signature="opaque-data", redacted=True)
    unsigned = ThinkingContent("half a thought")
    answer = AssistantMessage(
        content=(signed, redacted, unsigned, TextContent("done"), call("a")),
        stop_reason="toolUse",
        api="anthropic-messages",
    )
    params = build_request(MODEL, context([user("q"), answer, result("a")]), SHORT)
    assert params["messages"][1]["content"][:3] == [
        {"type": "thinking", "thinking": "let me look", "signature": "sig-1"},
        {"type": "redacted_thinking", "data": "opaque-data"},
        {"type": "text", "text": "done"},
    ]


def test_thinking_of_another_api_is_left_out() -> None:
    answer = assistant(
        text="hello", api="openai-responses", thinking=ThinkingContent("x", signature='{"id":"r"}')
    )
    params = build_request(MODEL, context([user("q"), answer, user("more")]), SHORT)
    assert params["messages"][1]["content"] == [{"type": "text", "text": "hello"}]


def test_failed_answers_are_left_out_and_interrupted_ones_kept() -> None:
    failed = AssistantMessage((), "error", error_message="overloaded")
    aborted = AssistantMessage(
        (ThinkingContent("unsigned"), TextContent("partial")), "aborted"
    )
    messages = [user("one"), failed, user("two"), aborted, user("three")]
    params = build_request(MODEL, context(messages), SHORT)
    assert params["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "partial"}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "three", "cache_control": {"type": "ephemeral"}},
            ],
        },
    ]


def test_a_tool_call_without_result_gets_an_error_result() -> None:
    messages = [user("go"), assistant(call("a"), call("b")), result("a"), user("stop that")]
    content = build_request(MODEL, context(messages), SHORT)["messages"][2]["content"]
    assert [(b["type"], b.get("tool_use_id"), b.get("is_error")) for b in content] == [
        ("tool_result", "a", None),
        ("tool_result", "b", True),
        ("text", None, None),
    ]


def test_tool_choice_none_keeps_the_tools() -> None:
    messages = [user("summarise")]
    auto = build_request(MODEL, context(messages), SHORT)
    none = build_request(MODEL, context(messages), CallOptions(session_id="s1", tool_choice="none"))
    assert none["tools"] == auto["tools"]
    assert none["tool_choice"] == {"type": "none"}
    assert "tool_choice" not in auto


def test_max_tokens_defaults_to_the_model_output_limit() -> None:
    messages = [user("hi")]
    assert build_request(MODEL, context(messages), SHORT)["max_tokens"] == MODEL.max_output
    assert build_request(MODEL, context(messages), CallOptions(max_tokens=100))["max_tokens"] == 100


def test_images_and_empty_and_failed_tool_results() -> None:
    image = ImageContent(data="aGVsbG8=", mime_type="image/png")
    messages = [
        UserMessage((TextContent("what is this?"), image)),
        assistant(call("a")),
        ToolResultMessage("a", "read", (), is_error=True),
    ]
    params = build_request(MODEL, context(messages), SHORT)
    assert params["messages"][0]["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "aGVsbG8="},
    }
    block = strip_cache_control(params["messages"][2]["content"][0])
    assert block == {
        "type": "tool_result",
        "tool_use_id": "a",
        "content": [{"type": "text", "text": "(empty)"}],
        "is_error": True,
    }


def test_same_history_same_bytes_whatever_the_argument_key_order() -> None:
    def history(arguments: dict[str, object]) -> list[object]:
        c = ToolCall("a", "edit", arguments)
        return [user("edit it"), assistant(c), result("a", name="edit")]

    first = {"path": "a.py", "old": "x", "new": "y", "opts": {"b": 1, "a": [2, {"d": 3, "c": 4}]}}
    second = {"opts": {"a": [2, {"c": 4, "d": 3}], "b": 1}, "new": "y", "old": "x", "path": "a.py"}
    assert list(first) != list(second)
    one = dumps(build_request(MODEL, context(history(first)), SHORT))  # type: ignore[arg-type]
    two = dumps(build_request(MODEL, context(history(second)), SHORT))  # type: ignore[arg-type]
    assert one == two
    # And again: nothing in building depends on state.
    assert one == dumps(build_request(MODEL, context(history(first)), SHORT))  # type: ignore[arg-type]


def test_request_n_plus_1_begins_with_request_n() -> None:
    requests = growing_conversation(steps=9, parallel_at=5, parallel=15)
    bodies = [
        dumps(strip_cache_control(build_request(MODEL, context(messages), SHORT)))
        for messages in requests
    ]
    for before, after in itertools.pairwise(bodies):
        # Everything but the closing brackets of the message list and the body.
        assert before.endswith("]}")
        assert after.startswith(before[:-2])


@pytest.mark.parametrize("retention", ["short", "long"])
def test_no_1h_breakpoint_ever_follows_a_5m_one(retention: str) -> None:
    """The API refuses a 1-hour breakpoint after a 5-minute one; every request of a growing
    session, four breakpoints included, keeps one TTL throughout."""
    options = CallOptions(session_id="s1", cache_retention=retention)  # type: ignore[arg-type]
    expected = "1h" if retention == "long" else "5m"
    for messages in growing_conversation(steps=9, parallel_at=5):
        params = build_request(MODEL, context(messages), options)
        assert list(params)[-3:] == ["tools", "system", "messages"]
        ttls = cache_ttls(params)
        assert ttls and set(ttls) == {expected}


def test_a_paused_answer_sent_back_loses_its_trailing_whitespace_only_at_the_end() -> None:
    paused = assistant(text="Searching for it.\n\n", stop_reason="pauseTurn")
    params = build_request(MODEL, context([user("find it"), paused]), SHORT)
    final = params["messages"][-1]
    assert final["role"] == "assistant"
    assert final["content"] == [{"type": "text", "text": "Searching for it."}]
    # Once the continuation follows, the paused text goes back as it was.
    later = [user("find it"), paused, assistant(text="Found it."), user("thanks")]
    merged = build_request(MODEL, context(later), SHORT)["messages"][1]
    assert merged["content"][0]["text"] == "Searching for it.\n\n"


def test_a_paused_answer_of_whitespace_only_is_not_sent() -> None:
    paused = assistant(text="  \n", stop_reason="pauseTurn")
    params = build_request(MODEL, context([user("find it"), paused]), SHORT)
    assert [message["role"] for message in params["messages"]] == ["user"]


def test_thinking_off_sends_nothing_a_budget_model_gets_a_budget_within_max_tokens() -> None:
    ctx = context([user("hi")])
    plain = build_request(MODEL, ctx, SHORT)
    assert "thinking" not in plain and "output_config" not in plain
    haiku = ModelRegistry().require("claude-haiku-4-5")
    assert haiku.thinking == "budget"
    for level, budget in (("low", 4_096), ("medium", 10_000), ("high", 32_000)):
        params = build_request(haiku, ctx, CallOptions(session_id="s1", thinking=level))
        assert params["thinking"] == {"type": "enabled", "budget_tokens": budget}
        assert params["max_tokens"] == haiku.max_output > budget
    # A call that asks for little output (a summary) gets the same budget on top: the
    # same thinking setting as the calls it shares its cached messages with.
    small = build_request(
        haiku, ctx, CallOptions(session_id="s1", thinking="low", max_tokens=2_000)
    )
    assert small["thinking"]["budget_tokens"] == 4_096 and small["max_tokens"] == 6_096
    # At most half the model's output limit (the simulator's 4096 -> 2048).
    sim_small = ModelRegistry().require("sim-small")
    capped = build_request(sim_small, ctx, CallOptions(session_id="s1", thinking="high"))
    assert capped["thinking"]["budget_tokens"] == 2_048 and capped["max_tokens"] == 4_096


def test_an_adaptive_model_gets_adaptive_thinking_summarised_and_the_effort() -> None:
    sonnet = ModelRegistry().require("claude-sonnet-4-6")
    params = build_request(
        sonnet, context([user("hi")]), CallOptions(session_id="s1", thinking="medium")
    )
    assert params["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert params["output_config"] == {"effort": "medium"}
    assert params["max_tokens"] == sonnet.max_output
    # Every model the registry lists for Anthropic says how it thinks.
    anthropic_models = [m for m in ModelRegistry() if m.vendor == "anthropic"]
    assert anthropic_models and all(m.thinking is not None for m in anthropic_models)
