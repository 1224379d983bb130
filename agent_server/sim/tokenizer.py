"""The simulator's tokenizer: one deterministic rule for usage, limits and caching alike.

It is not a real BPE vocabulary, but a pre-tokenizing regular expression in which every match
is one token, calibrated so that the counts land where real BPE tokenizers land:

- English prose: about 4 characters per token (a word of up to 6 letters with its leading space
  is one token; longer words are cut every 6 letters);
- Python source: about 3.2-3.3 (identifiers split at `_` and case changes, operators in pairs);
- dense text (base64, hex, minified JSON, log lines full of numbers): about 1.8-2.2, because case
  changes, digit runs (3 digits per token) and punctuation each cost a token.

So chars/4 is a fair estimate for prose and an under-estimate for dense content, as it is
against real models. Every character is consumed by some alternative, which makes counting
`len(findall)`, and truncating to N tokens joining the first N matches.

Counting is memoised per string: a long session re-sends the same content blocks on every call.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict

_TOKEN = re.compile(
    r"[ ]?[A-Z]{2,4}"  # a run of capitals (acronyms, base64): up to 4 per token
    r"|[ ]?[A-Za-z][a-z]{0,5}"  # a word, or a 6-letter piece of a longer one, with its space
    r"|\d{1,3}"  # digits, three per token
    r"|[ ]?[^\sA-Za-z\d\x80-\U0010ffff]{1,2}"  # punctuation, in pairs
    r"|\n+"  # a run of newlines
    r"|[ \t]{1,8}"  # indentation, 8 columns per token
    r"|\s"  # any other whitespace
    r"|[\x80-\U0010ffff]"  # anything beyond ASCII: one token per character
)

# Strings shorter than this are counted directly; caching them costs more than it saves.
_MEMO_MIN_CHARS = 256
_MEMO_MAX_CHARS = 64 * 1024 * 1024


class _TokenMemo:
    """Counts of long strings, least recently used first out, bounded by total characters."""

    def __init__(self, max_chars: int) -> None:
        self._max_chars = max_chars
        self._chars = 0
        self._counts: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()

    def count(self, text: str) -> int:
        with self._lock:
            cached = self._counts.get(text)
            if cached is not None:
                self._counts.move_to_end(text)
                return cached
        tokens = len(_TOKEN.findall(text))
        with self._lock:
            if text not in self._counts:
                self._counts[text] = tokens
                self._chars += len(text)
                while self._chars > self._max_chars and self._counts:
                    evicted, _ = self._counts.popitem(last=False)
                    self._chars -= len(evicted)
        return tokens


_MEMO = _TokenMemo(_MEMO_MAX_CHARS)


def count_tokens(text: str) -> int:
    """The number of tokens in `text` (0 for the empty string)."""
    if len(text) < _MEMO_MIN_CHARS:
        return len(_TOKEN.findall(text))
    return _MEMO.count(text)


def split_tokens(text: str) -> list[str]:
    """`text` cut into its tokens; `"".join(split_tokens(t)) == t`."""
    return _TOKEN.findall(text)


def truncate_to_tokens(text: str, limit: int) -> str:
    """The longest prefix of `text` that is at most `limit` tokens."""
    if limit <= 0:
        return ""
    pieces = split_tokens(text)
    if len(pieces) <= limit:
        return text
    return "".join(pieces[:limit])


# Plain sentences about the work, for answers that must have a scripted length: filler reads as
# a model's closing remarks, never as a broken model. Short ones close the gap exactly.
_FILLER_SENTENCES = (
    "I kept a note of each file as I read it, so later steps can refer back to it.",
    "The paths above are relative to the root of the workspace.",
    "Nothing here needs a change yet; the next step is to confirm this with the tests.",
    "If you want more detail on any of these parts, ask and I will open the files again.",
    "The layout is small enough to keep in mind as a whole while we work on it.",
    "Where the code and the documentation disagree, I trusted the code.",
    "I have not changed any file while looking into this.",
    "The tests are the best guide to what the code is meant to do.",
    "Each module has one job, which makes the flow of data easy to follow.",
    "I can go deeper into any of these points when you need it.",
    "That covers what I found so far.",
    "Let me know what to look at next.",
)
# Closing remarks of distinct lengths: some subset of them (and a final newline) makes up any
# remainder shorter than a sentence.
_FILLER_CLOSERS = (
    "I will wait for your next question before I do anything more.",
    "That is all I have to report on this part for now.",
    "I will wait for your next question before doing more.",
    "That is all I have to report for this step.",
    "I hope this helps with the next step.",
    "That is all for this step.",
    "Nothing more for now.",
    "All done for now.",
    "That is all.",
    "All done.",
    "Done.",
)


def filler_text(tokens: int, seed: int = 0) -> str:
    """Deterministic, readable prose of exactly `tokens` tokens (paragraphs of 3 sentences)."""
    if tokens <= 0:
        return ""
    sentences = [(text, count_tokens(" " + text)) for text in _FILLER_SENTENCES]
    closers = [(text, count_tokens(" " + text)) for text in _FILLER_CLOSERS]
    parts: list[str] = []
    used = 0
    index = seed % len(sentences)
    in_paragraph = 0
    while True:
        text, cost = sentences[index % len(sentences)]
        index += 1
        breaking = in_paragraph == 3
        if used + cost + breaking > tokens:
            break
        if breaking:
            parts.append("\n\n")
            used += 1
            in_paragraph = 0
        parts.append(text if not parts or breaking else " " + text)
        used += cost
        in_paragraph += 1
    chosen = _closing(closers, tokens - used)
    for text in chosen:
        parts.append(" " + text if parts else text)
    if sum(cost for text, cost in closers if text in chosen) + used < tokens:
        parts.append("\n")  # one token, at the end: a trailing newline
    return "".join(parts)


def _closing(closers: list[tuple[str, int]], gap: int) -> list[str]:
    """Distinct closers whose costs add up to `gap` or `gap - 1` (longest first)."""
    for target in (gap, gap - 1):
        picked = _pick(closers, target)
        if picked is not None:
            return picked
    return []


def _pick(closers: list[tuple[str, int]], target: int) -> list[str] | None:
    if target == 0:
        return []
    for index, (text, cost) in enumerate(closers):
        if cost <= target:
            rest = _pick(closers[index + 1 :], target - cost)
            if rest is not None:
                return [text, *rest]
    return None
