from __future__ import annotations

import base64
import random

from agent_server.context.estimate import (
    IMAGE_TOKENS,
    estimate_context_tokens,
    estimate_full,
    estimate_text_floor,
    estimate_text_tokens,
    estimate_tokens,
    estimate_weighted_tokens,
)
from agent_server.context.projection import project
from agent_server.context.trigger import find_oversized_prompt
from agent_server.llm.messages import (
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)
from agent_server.sim.tokenizer import count_tokens

from .builders import assistant, call, compaction, entries_of, result, user


def ctx(*messages: Message, system: str = "", tools: tuple[ToolSpec, ...] = ()) -> Context:
    return Context(system, tools, messages)


def test_chars_over_four_rounded_up() -> None:
    assert estimate_tokens(user("")) == 0
    assert estimate_tokens(user("a")) == 1
    assert estimate_tokens(user("abcd")) == 1
    assert estimate_tokens(user("abcde")) == 2
    assert estimate_tokens(UserMessage((TextContent("ab"), TextContent("cd")))) == 1


def test_what_counts() -> None:
    thinking = AssistantMessage((ThinkingContent("t" * 8), TextContent("x" * 4)), "stop")
    assert estimate_tokens(thinking) == 3
    # the name plus the arguments' JSON: read + {"path":"a.py"}
    tool = assistant("", call("c1", "read", path="a.py"))
    assert estimate_tokens(tool) == -(-(len("read") + len('{"path":"a.py"}')) // 4)
    assert estimate_tokens(result("c1", "y" * 40)) == 10
    image = UserMessage((ImageContent("AAAA" * 10_000, "image/png"),))
    assert estimate_tokens(image) == IMAGE_TOKENS
    tool_image = ToolResultMessage("c", "read", (ImageContent("AA", "image/png"),))
    assert estimate_tokens(tool_image) == IMAGE_TOKENS


def test_thinking_counts_its_text_and_a_redacted_block_its_payload_both_ways() -> None:
    # Anthropic signs every thinking block: the signature is not what the context holds.
    signed = AssistantMessage((ThinkingContent("word " * 40, signature="S" * 4000),), "stop")
    redacted = AssistantMessage(
        (ThinkingContent("", signature="E" * 400, redacted=True),), "stop"
    )
    assert estimate_tokens(signed) == 50
    assert estimate_weighted_tokens(signed) == estimate_text_tokens("word " * 40)
    assert estimate_tokens(redacted) == 100
    assert estimate_weighted_tokens(redacted) == estimate_text_tokens("E" * 400)


def test_full_estimate_counts_system_and_tools() -> None:
    tool = ToolSpec("read", "Read a file", {"type": "object"})
    full = estimate_full(ctx(user("abcd"), system="s" * 40, tools=(tool,)))
    assert full == 1 + 10 + -(-(4 + 11 + len('{"type":"object"}')) // 4)


def test_the_text_floor_counts_what_every_server_is_sent_and_not_thinking_or_images() -> None:
    """The floor a local server's reported prompt is held to (a silent cut): a reasoning
    model's thinking is not sent back to a Chat Completions server, and a model spends from
    256 to 1,600 tokens on an image, so neither may raise it; text, calls and results do."""
    tool = ToolSpec("read", "Read a file", {"type": "object"})
    thought = AssistantMessage(
        (ThinkingContent("t" * 40_000), TextContent("x" * 40)), "toolUse"
    )
    image = UserMessage((TextContent("see"), ImageContent("AAAA" * 1000, "image/png")))
    context = ctx(
        user("abcd"), thought, assistant("", call("c1", "read", path="a.py")),
        result("c1", "y" * 40), image, system="s" * 40, tools=(tool,),
    )
    prefix = 10 + -(-(4 + 11 + len('{"type":"object"}')) // 4)
    sent = len("abcd") + 40 + len("read") + len('{"path":"a.py"}') + 40 + len("see")
    assert estimate_text_floor(context) == prefix + -(-sent // 4)
    assert estimate_full(context) > estimate_text_floor(context) + 10_000 + IMAGE_TOKENS - 1


def test_no_usage_falls_back_to_the_full_estimate() -> None:
    estimate = estimate_context_tokens(ctx(user("x" * 400), assistant("y" * 400)))
    assert estimate.tokens == estimate.full_estimate == 200
    assert estimate.last_usage_index is None
    assert not estimate.from_usage


def test_last_usage_plus_trailing_messages() -> None:
    context = ctx(
        user("x" * 40),
        assistant("first", usage=Usage(input=500, output=100)),
        user("again"),
        assistant("second", usage=Usage(input=900, cache_read=1000, output=100)),
        result("c1", "z" * 400),
        user("q" * 40),
    )
    estimate = estimate_context_tokens(context)
    assert estimate.last_usage_index == 3
    assert estimate.usage_tokens == 2000
    assert estimate.trailing_tokens == 100 + 10
    assert estimate.tokens == 2110


def test_never_below_the_full_estimate() -> None:
    context = ctx(user("x" * 40_000), assistant("ok", usage=Usage(input=10, output=1)))
    estimate = estimate_context_tokens(context)
    assert estimate.usage_tokens == 11
    assert estimate.tokens == estimate.full_estimate > 10_000


def test_error_and_aborted_usage_is_ignored() -> None:
    good = assistant("good", usage=Usage(input=3000, output=10))
    failed = assistant("", stop="error", usage=Usage(input=99_999))
    aborted = assistant("half", stop="aborted", usage=Usage(input=88_888))
    estimate = estimate_context_tokens(ctx(user("go"), good, user("more"), failed, aborted))
    assert estimate.last_usage_index == 1
    assert estimate.usage_tokens == 3010


def test_usage_from_before_a_compaction_is_stale() -> None:
    # kept messages carry usage measured on the context before the compaction
    path = entries_of(
        user("old " * 100),
        assistant("old answer", usage=Usage(input=150_000, output=500)),
        user("kept"),
        assistant("kept answer", usage=Usage(input=160_000, output=500)),
    )
    path.append(compaction("c1", path[-1].id, first_kept="m2"))
    projection = project(path)
    context = ctx(*projection.messages)
    assert projection.fresh_from == len(projection.messages)
    stale = estimate_context_tokens(context, fresh_from=projection.fresh_from)
    assert stale.last_usage_index is None
    assert stale.full_estimate <= stale.tokens < 1000  # weighted by kind, never below chars/4
    # without fresh_from the stale bill would wrongly dominate
    assert estimate_context_tokens(context).tokens > 160_000
    # a call after the compaction gives fresh usage again
    path += entries_of(
        user("next"), assistant("fresh", usage=Usage(input=2000, output=50)), start=10
    )
    path[-2] = path[-2].__class__(path[-2].id, "c1", path[-2].timestamp, path[-2].message)
    projection = project(path)
    fresh = estimate_context_tokens(ctx(*projection.messages), fresh_from=projection.fresh_from)
    assert fresh.last_usage_index == len(projection.messages) - 1
    assert fresh.tokens == max(2050, fresh.full_estimate)


def dense_samples() -> dict[str, str]:
    rng = random.Random(3)
    log = "".join(
        f"2024-05-{rng.randint(1, 28):02d} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:"
        f"{rng.randint(0, 59):02d},{rng.randint(0, 999):03d} ERROR cli: SKU-{rng.randint(0, 9999)}"
        f": cannot take {rng.randint(1, 20)}, only {rng.randint(0, 9)} in stock\n"
        for _ in range(200)
    )
    return {
        "log": log,
        "base64": base64.encodebytes(rng.randbytes(6000)).decode(),
        "hex": " ".join(f"{b:02x}" for b in rng.randbytes(3000)),
        "csv": "".join(f"SKU-{i:04d},{rng.randint(0, 999)},{rng.random() * 100:.2f}\n"
                       for i in range(300)),
    }


def test_dense_text_is_weighted_above_chars_over_four_and_prose_is_not() -> None:
    prose = "The paths above are relative to the root of the workspace. " * 50
    assert estimate_text_tokens(prose) == -(-len(prose) // 4)
    code = "def parse_row(row: dict[str, str]) -> Item:\n    return Item(**row)\n" * 40
    assert estimate_text_tokens(code) > len(code) / 4
    for kind, text in dense_samples().items():
        # against the simulator's tokenizer, calibrated on real BPE ratios
        real = count_tokens(text)
        assert len(text) / 4 < 0.6 * real, kind  # chars/4 is far too low for these
        assert estimate_text_tokens(text) >= 0.65 * real, kind


def test_text_beyond_ascii_is_not_counted_as_prose() -> None:
    rng = random.Random(5)
    chinese = "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(600)) + "，。"
    japanese = "日本語のテキストはカタカナとひらがなを含みます。" * 20
    korean = "한국어 텍스트는 음절마다 토큰이 됩니다. " * 20
    for kind, text in {"zh": chinese, "ja": japanese, "ko": korean}.items():
        # a token a character, as real tokenizers and the simulator's count them; chars/4 is
        # a quarter of that
        real = count_tokens(text)
        assert len(text) / 4 < 0.3 * real, kind
        assert 0.9 * real <= estimate_text_tokens(text) <= 1.1 * real, kind
    russian = "Файл не найден: проверьте путь и повторите попытку. " * 20
    assert estimate_text_tokens(russian) >= len(russian) / 2.5
    # accented letters inside ASCII words change the count little
    french = "Le café est fermé; le résumé est prêt. " * 20
    assert estimate_text_tokens(french) <= len(french) / 2.5


def test_an_oversized_prompt_is_measured_by_its_kind() -> None:
    rng = random.Random(6)
    cjk = "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(8_000))
    entries = entries_of(user(cjk))
    # 8,000 characters are 2,000 tokens at chars/4, about 8,000 really
    oversized = find_oversized_prompt(entries, prefix_tokens=1_000, threshold=6_000)
    assert oversized is not None and oversized.tokens >= 7_900


def test_what_came_after_the_last_usage_is_weighted_by_its_kind() -> None:
    log = dense_samples()["log"]
    context = ctx(
        user("read the log"),
        assistant("reading", call("c1", "read", path="app.log"), usage=Usage(input=2000)),
        result("c1", log),
    )
    estimate = estimate_context_tokens(context)
    assert estimate.usage_tokens == 2000
    assert estimate.trailing_tokens > estimate_tokens(result("c1", log)) * 1.3
    assert estimate.tokens == 2000 + estimate.trailing_tokens
