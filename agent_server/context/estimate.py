"""How many tokens a context holds, without a tokenizer.

Invariant 3 of DESIGN.md: the last real `usage` the provider reported (the exact size of the
context after that call) plus an estimate of the messages after it, weighted by their kind;
never below the chars/4 estimate of the whole context; the weighted estimate of the whole
context when there is no usage, or when the usage was measured before the latest compaction
(the context it measured is gone).

chars/4 is right for prose and low for everything denser: code runs about 3.2 characters a
token, logs and CSV 2-2.7, base64, hex and minified JSON under 2, with real BPE tokenizers.
What came after the last usage is mostly tool output, so it is weighted by its kind
(`estimate_text_tokens`): the text is cut the way BPE tokenizers pre-tokenize it (GPT-2's
pattern and its successors: a word with its leading space, a run of up to 3 digits, a run of
punctuation, a run of whitespace) and each piece costs what such pieces cost: a word a token
per 6 letters, 3 digits a token, punctuation a token per 2 characters, whitespace a token.
That lands within 10% of the simulator's calibrated count for prose, code, logs, CSV and JSON
and at 70% for base64 and hex (chars/4: 36-98%), and never below chars/4.

Text beyond ASCII is not prose at chars/4. Chinese, Japanese and Korean cost about a token a
character (cl100k and o200k: 0.7-1.5 per character, Claude's tokenizer about 1), so each such
character is a token; other letters beyond ASCII (Cyrillic, Greek, accented Latin) cost about
a token per 2 characters (cl100k takes 2.5-3 for Russian; erring high costs an early
compaction, erring low an overflow); symbols beyond ASCII count as punctuation. Counted at chars/4,
a read of CJK text was estimated at a quarter of its size, and the window overflowed.
"""

from __future__ import annotations

import json
import math
import re
from collections import OrderedDict
from dataclasses import dataclass

from agent_server.llm.messages import (
    AssistantMessage,
    CompactionContent,
    Context,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolSpec,
)

CHARS_PER_TOKEN = 4
# What an image costs, whatever its size (providers scale images to about this).
IMAGE_TOKENS = 1200


def _tokens(chars: int) -> int:
    return -(-chars // CHARS_PER_TOKEN)  # rounded up


# BPE pre-tokenization, as GPT-2's tokenizer and its successors cut text before merging: a
# word with its leading space, up to 3 digits, a run of CJK characters, a punctuation run, a
# whitespace run. A word with letters beyond ASCII costs more (see the module docstring).
_WIDE = (
    "\u1100-\u11ff\u2e80-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff00-\uffef"
    "\U00020000-\U0003ffff"
)  # Hangul jamo, CJK radicals to ideographs (kana included), Hangul syllables, full width
_PIECE = re.compile(
    rf" ?[A-Za-z]+| ?[^\W\d_{_WIDE}]+| ?\d{{1,3}}|[{_WIDE}]+"
    rf"| ?[!-/:-@\[-`{{-~]+| ?(?:[^\w\s{_WIDE}]|_)+|\s+"
)  # ASCII letters first, and ASCII punctuation before the rest: most text is ASCII
_LETTERS_PER_TOKEN = 6
_OTHER_LETTERS_PER_TOKEN = 2
_PUNCTUATION_PER_TOKEN = 2
_MEMO_MIN_CHARS = 1024
_MEMO_MAX_CHARS = 16 * 1024 * 1024
_memo: OrderedDict[str, int] = OrderedDict()
_memo_chars = 0


_WIDE_CHAR = re.compile(f"[{_WIDE}]")


def _is_wide(char: str) -> bool:
    return _WIDE_CHAR.match(char) is not None


def estimate_text_tokens(text: str) -> int:
    """Tokens of `text` weighted by its kind (see the module docstring); at least chars/4."""
    global _memo_chars
    cached = _memo.get(text) if len(text) >= _MEMO_MIN_CHARS else None
    if cached is not None:
        _memo.move_to_end(text)
        return cached
    tokens = 0
    for piece in _PIECE.findall(text):
        body = piece[1:] if len(piece) > 1 and piece[0] == " " else piece
        first = body[0]
        if not first.isascii() and _is_wide(first):
            tokens += len(body)
        elif first.isalpha():
            other = 0 if body.isascii() else len(body) - len(body.encode("ascii", "ignore"))
            tokens += math.ceil(
                (len(body) - other) / _LETTERS_PER_TOKEN + other / _OTHER_LETTERS_PER_TOKEN
            )
        elif first.isdigit() or first.isspace():
            tokens += 1
        else:
            tokens += math.ceil(len(body) / _PUNCTUATION_PER_TOKEN)
    tokens = max(tokens, _tokens(len(text)))
    if len(text) >= _MEMO_MIN_CHARS:
        _memo[text] = tokens
        _memo_chars += len(text)
        while _memo_chars > _MEMO_MAX_CHARS and _memo:
            evicted, _ = _memo.popitem(last=False)
            _memo_chars -= len(evicted)
    return tokens


def _texts(message: Message) -> tuple[list[str], int]:
    """The texts of a message that count (text, thinking, tool calls with their arguments,
    tool results) and how many images it carries."""
    texts: list[str] = []
    images = 0
    if isinstance(message, AssistantMessage):
        for block in message.content:
            if isinstance(block, TextContent):
                texts.append(block.text)
            elif isinstance(block, ThinkingContent):
                # A redacted block carries its encrypted payload in `signature`.
                texts.append((block.signature or "") if block.redacted else block.thinking)
            elif isinstance(block, ToolCall):
                texts.append(block.name)
                texts.append(json.dumps(block.arguments, ensure_ascii=False, separators=(",", ":")))
            elif isinstance(block, CompactionContent):
                # A provider's compaction: its summary, or all of its JSON when that is
                # encrypted (an over-estimate: the provider's next usage corrects it).
                texts.append(block.summary or json.dumps([dict(i) for i in block.items]))
        return texts, images
    for part in message.content:
        if isinstance(part, TextContent):
            texts.append(part.text)
        elif isinstance(part, ImageContent):
            images += 1
    return texts, images


def message_chars(message: Message) -> int:
    """Characters that count for a message; an image counts as IMAGE_TOKENS * 4."""
    texts, images = _texts(message)
    return sum(len(text) for text in texts) + images * IMAGE_TOKENS * CHARS_PER_TOKEN


def estimate_tokens(message: Message) -> int:
    """chars/4, rounded up, of one message's text, thinking, tool calls and tool results."""
    return _tokens(message_chars(message))


def estimate_weighted_tokens(message: Message) -> int:
    """One message's tokens with its text weighted by kind (estimate_text_tokens); images
    at IMAGE_TOKENS."""
    texts, images = _texts(message)
    return sum(estimate_text_tokens(text) for text in texts) + images * IMAGE_TOKENS


def estimate_tool_tokens(tool: ToolSpec) -> int:
    schema = json.dumps(tool.parameters, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return _tokens(len(tool.name) + len(tool.description) + len(schema))


def estimate_prefix_tokens(system_prompt: str, tools: tuple[ToolSpec, ...]) -> int:
    """The system prompt and the tool definitions."""
    return _tokens(len(system_prompt)) + sum(estimate_tool_tokens(t) for t in tools)


def estimate_full(context: Context) -> int:
    """chars/4 of everything: system prompt, tools, every message."""
    return estimate_prefix_tokens(context.system_prompt, context.tools) + sum(
        estimate_tokens(m) for m in context.messages
    )


def estimate_text_floor(context: Context) -> int:
    """chars/4 of what any server is sent of `context` as text: the system prompt, the tools,
    the messages' text, tool calls and tool results; not thinking (a Chat Completions server
    is not sent it back) nor images (a model spends 256 to 1,600 tokens on one). A floor of
    the prompt tokens a server reads, whatever its tokenizer: one that reports fewer has not
    read it all."""
    chars = 0
    for message in context.messages:
        if isinstance(message, AssistantMessage):
            for block in message.content:
                if isinstance(block, TextContent):
                    chars += len(block.text)
                elif isinstance(block, ToolCall):
                    arguments = json.dumps(
                        block.arguments, ensure_ascii=False, separators=(",", ":")
                    )
                    chars += len(block.name) + len(arguments)
        else:
            chars += sum(len(p.text) for p in message.content if isinstance(p, TextContent))
    return estimate_prefix_tokens(context.system_prompt, context.tools) + _tokens(chars)


def has_real_usage(message: Message) -> bool:
    """An assistant message carrying the provider's bill for a completed call."""
    return (
        isinstance(message, AssistantMessage)
        and message.usage is not None
        and message.usage.total_tokens > 0
        and message.stop_reason not in ("error", "aborted")
    )


def find_last_usage_index(messages: tuple[Message, ...], fresh_from: int = 0) -> int | None:
    """Index of the last message at or after `fresh_from` with real usage, if any."""
    for index in range(len(messages) - 1, max(fresh_from, 0) - 1, -1):
        if has_real_usage(messages[index]):
            return index
    return None


@dataclass(frozen=True, slots=True)
class ContextEstimate:
    """`tokens` is the number to compare with the threshold.

    `usage_tokens` is the provider's total at `last_usage_index` and `trailing_tokens` the
    weighted estimate of the messages after it (both 0 and the index None when no usable usage
    exists); `full_estimate` is chars/4 of the whole context.
    """

    tokens: int
    usage_tokens: int
    trailing_tokens: int
    full_estimate: int
    last_usage_index: int | None

    @property
    def from_usage(self) -> bool:
        return self.last_usage_index is not None


def estimate_context_tokens(context: Context, *, fresh_from: int = 0) -> ContextEstimate:
    """The size of `context` per invariant 3.

    `fresh_from` is the index of the first message appended after the latest compaction
    (Projection.fresh_from): usage on messages before it measured a context that no longer
    exists, so it is ignored.
    """
    full = estimate_full(context)
    index = find_last_usage_index(context.messages, fresh_from)
    if index is None:
        weighted = estimate_prefix_tokens(context.system_prompt, context.tools) + sum(
            estimate_weighted_tokens(m) for m in context.messages
        )
        return ContextEstimate(max(weighted, full), 0, 0, full, None)
    message = context.messages[index]
    assert isinstance(message, AssistantMessage)
    assert message.usage is not None
    usage = message.usage.total_tokens
    trailing = sum(estimate_weighted_tokens(m) for m in context.messages[index + 1 :])
    return ContextEstimate(max(usage + trailing, full), usage, trailing, full, index)
