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


# Words of at most 6 lowercase letters: each, with its leading space, is exactly one token.
_FILLER_WORDS = (
    "the", "model", "reads", "each", "file", "and", "notes", "what", "it", "finds", "about",
    "code", "base", "while", "keeps", "track", "of", "paths", "names", "tests", "so", "that",
    "later", "steps", "can", "refer", "back", "to", "them", "with", "no", "need", "read",
    "again", "this", "text", "is", "filler", "used", "by", "sim", "make", "long", "output", "a",
    "known", "size", "has", "sense", "beyond", "its", "length", "never", "varies", "from", "run",
)


def filler_text(tokens: int, seed: int = 0) -> str:
    """Deterministic prose of exactly `tokens` tokens (sentences of 12 words, paragraphs of 4)."""
    if tokens <= 0:
        return ""
    words: list[str] = []
    used = 0
    index = seed % len(_FILLER_WORDS)
    sentence_words = 0
    sentences = 0
    while used < tokens:
        word = _FILLER_WORDS[index % len(_FILLER_WORDS)]
        index += 5  # coprime with the vocabulary size (56): every word comes round
        if not words or words[-1].endswith("\n\n"):
            words.append(word.capitalize())
        else:
            words.append(" " + word)
        used += 1
        sentence_words += 1
        if sentence_words == 12 and used < tokens:
            words.append(".")
            used += 1
            sentence_words = 0
            sentences += 1
            if sentences % 4 == 0 and used < tokens:
                words.append("\n\n")
                used += 1
    text = "".join(words)
    return text
