"""Prompt caching, by the providers' documented rules.

A request is rendered (by its API module) into a sequence of `PromptBlock`s in prefix order. A
prefix is identified by a cumulative hash: the hash of block i covers blocks 0..i, so a changed
byte anywhere changes every later prefix. Hashes are scoped by model (and, for OpenAI, by
`prompt_cache_key`).

Anthropic (explicit breakpoints):
- each block carrying `cache_control` is a breakpoint; it writes the prefix up to and including
  that block, if the prefix has at least the model's `min_cache_tokens`;
- a request reads the longest live cached prefix found at one of its breakpoints or at one of
  the 20 block boundaries before each (the lookback): an entry N blocks before a breakpoint is
  found if N <= 20;
- entries live 5 minutes, or 1 hour with `ttl: "1h"`, and a read refreshes them;
- usage: `cache_read` = the prefix read, `cache_creation` = from there to the last breakpoint
  written (split by each breakpoint's TTL), `input` = everything after.

OpenAI (automatic): every block boundary of a prompt of at least 1024 tokens is remembered per
(model, prompt_cache_key); a request's cached tokens are the longest remembered boundary,
floored to a multiple of 128, if at least 1024. Entries live 10 minutes after their last use
(`in_memory`), or 24 hours with `prompt_cache_retention: "24h"`. Matching is block-granular:
a prefix that diverges inside a block counts up to the previous block boundary.

OpenAI from GPT-5.6 on (models that bill cache writes): one implicit breakpoint at the end of
the prompt is the only entry a request writes, billed as `cache_write_tokens` (the prompt past
what was read); entries live `prompt_cache_options.ttl` (30 minutes, or 12 hours); `mode:
"explicit"` without breakpoints caches nothing (explicit breakpoints are not simulated).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

ANTHROPIC_TTL_5M = 5 * 60.0
ANTHROPIC_TTL_1H = 60 * 60.0
ANTHROPIC_LOOKBACK_BLOCKS = 20
OPENAI_MIN_CACHE_TOKENS = 1024
OPENAI_CACHE_STEP = 128
OPENAI_TTL_IN_MEMORY = 10 * 60.0
OPENAI_TTL_24H = 24 * 60 * 60.0
OPENAI_TTL_30M = 30 * 60.0
OPENAI_TTL_12H = 12 * 60 * 60.0

_PURGE_EVERY = 256


@dataclass(frozen=True, slots=True)
class PromptBlock:
    """One block of a rendered prompt.

    `canonical` is the block's serialisation for cache identity (without `cache_control`);
    `tokens` what it costs; `breakpoint_ttl` the TTL in seconds when it carries cache_control.
    """

    canonical: str
    tokens: int
    breakpoint_ttl: float | None = None


def prefix_hashes(blocks: Sequence[PromptBlock], scope: str = "") -> list[str]:
    """hashes[i] identifies blocks[0..i] (within `scope`)."""
    digest = hashlib.sha256(scope.encode("utf-8")).digest()
    out: list[str] = []
    for block in blocks:
        digest = hashlib.sha256(digest + block.canonical.encode("utf-8", "surrogatepass")).digest()
        out.append(digest.hex())
    return out


def cumulative_tokens(blocks: Sequence[PromptBlock]) -> list[int]:
    """totals[i] = tokens of blocks[0..i]."""
    total = 0
    out: list[int] = []
    for block in blocks:
        total += block.tokens
        out.append(total)
    return out


@dataclass(slots=True)
class _Entry:
    tokens: int
    ttl: float
    expires_at: float


@dataclass(frozen=True, slots=True)
class CacheUsage:
    """The prompt's tokens split by how they were billed; they add up to the prompt size."""

    input: int = 0  # uncached
    cache_read: int = 0
    cache_write_5m: int = 0
    cache_write_1h: int = 0

    @property
    def cache_write(self) -> int:
        return self.cache_write_5m + self.cache_write_1h

    @property
    def prompt_tokens(self) -> int:
        return self.input + self.cache_read + self.cache_write


class AnthropicPromptCache:
    """Cached prefixes for the Anthropic Messages API, keyed by (model, prefix hash)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._entries: dict[tuple[str, str], _Entry] = {}
        self._calls = 0

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        now = self._clock()
        return sum(1 for entry in self._entries.values() if entry.expires_at > now)

    def apply(self, model_id: str, min_tokens: int, blocks: Sequence[PromptBlock], *,
              write: bool = True) -> CacheUsage:
        """Read and write the cache for one request; returns how its prompt is billed.
        `write` False: read only (a provider's own pass over a request, such as the summary
        of a compaction, which no later request begins with)."""
        now = self._clock()
        self._maybe_purge(now)
        hashes = prefix_hashes(blocks)
        totals = cumulative_tokens(blocks)
        total = totals[-1] if totals else 0
        breakpoints = [i for i, block in enumerate(blocks) if block.breakpoint_ttl is not None]

        read_at = -1  # index of the last block of the prefix read
        for point in breakpoints:
            for index in range(point, max(point - ANTHROPIC_LOOKBACK_BLOCKS, 0) - 1, -1):
                if index <= read_at:
                    break
                entry = self._live(model_id, hashes[index], now)
                if entry is not None:
                    read_at = index
                    break
        if read_at >= 0:
            hit = self._entries[(model_id, hashes[read_at])]
            hit.expires_at = now + hit.ttl
        cache_read = totals[read_at] if read_at >= 0 else 0

        written_to = read_at
        write_5m = write_1h = 0
        for point in breakpoints if write else ():
            ttl = blocks[point].breakpoint_ttl
            assert ttl is not None
            key = (model_id, hashes[point])
            if point <= read_at:
                # Inside the prefix just read: keep it alive, at no cost.
                entry = self._live(model_id, hashes[point], now)
                if entry is not None:
                    entry.expires_at = max(entry.expires_at, now + ttl)
                continue
            if totals[point] < min_tokens:
                continue
            segment = totals[point] - (totals[written_to] if written_to >= 0 else 0)
            if ttl >= ANTHROPIC_TTL_1H:
                write_1h += segment
            else:
                write_5m += segment
            self._entries[key] = _Entry(tokens=totals[point], ttl=ttl, expires_at=now + ttl)
            written_to = point
        uncached = total - (totals[written_to] if written_to >= 0 else 0)
        return CacheUsage(
            input=uncached, cache_read=cache_read, cache_write_5m=write_5m, cache_write_1h=write_1h
        )

    def _live(self, model_id: str, digest: str, now: float) -> _Entry | None:
        entry = self._entries.get((model_id, digest))
        if entry is None or entry.expires_at <= now:
            return None
        return entry

    def _maybe_purge(self, now: float) -> None:
        self._calls += 1
        if self._calls % _PURGE_EVERY == 0:
            self._entries = {k: e for k, e in self._entries.items() if e.expires_at > now}


@dataclass(frozen=True, slots=True)
class OpenAICacheRequest:
    """How one OpenAI request asks to be cached (see `openai_cache_fields`)."""

    key: str | None = None  # prompt_cache_key
    retention: str | None = None  # prompt_cache_retention, as sent
    ttl: float = OPENAI_TTL_IN_MEMORY  # seconds an entry lives after its last use
    enabled: bool = True  # false: prompt_cache_options.mode "explicit" without breakpoints
    # GPT-5.6 on: one implicit breakpoint at the end of the prompt, its writes billed.
    bills_writes: bool = False


class OpenAIPromptCache:
    """Automatic prefix caching for the OpenAI APIs, keyed by (model, cache key, prefix hash)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._entries: dict[tuple[str, str], _Entry] = {}
        self._calls = 0

    def clear(self) -> None:
        self._entries.clear()

    def apply(
        self, model_id: str, request: OpenAICacheRequest, blocks: Sequence[PromptBlock]
    ) -> CacheUsage:
        now = self._clock()
        self._calls += 1
        if self._calls % _PURGE_EVERY == 0:
            self._entries = {k: e for k, e in self._entries.items() if e.expires_at > now}
        scope = f"{model_id}\x00{request.key or ''}"
        hashes = prefix_hashes(blocks, scope)
        totals = cumulative_tokens(blocks)
        total = totals[-1] if totals else 0
        if total < OPENAI_MIN_CACHE_TOKENS or not request.enabled:
            return CacheUsage(input=total)
        ttl = request.ttl

        matched = 0
        for index in range(len(blocks) - 1, -1, -1):
            if totals[index] < OPENAI_MIN_CACHE_TOKENS:
                break
            entry = self._entries.get((scope, hashes[index]))
            if entry is not None and entry.expires_at > now:
                matched = totals[index]
                break
        cached = (matched // OPENAI_CACHE_STEP) * OPENAI_CACHE_STEP
        if cached < OPENAI_MIN_CACHE_TOKENS:
            cached = 0

        if request.bills_writes:
            written = self._write_implicit_breakpoint(scope, hashes[-1], total, ttl, now)
            written = written - cached if written else 0
            long = ttl > OPENAI_TTL_30M
            return CacheUsage(
                input=total - cached - written,
                cache_read=cached,
                cache_write_5m=0 if long else written,
                cache_write_1h=written if long else 0,
            )
        for index, digest in enumerate(hashes):
            if totals[index] < OPENAI_MIN_CACHE_TOKENS:
                continue
            entry = self._entries.get((scope, digest))
            if entry is None or entry.expires_at <= now:
                self._entries[(scope, digest)] = _Entry(totals[index], ttl, now + ttl)
            else:
                entry.ttl = max(entry.ttl, ttl)
                entry.expires_at = max(entry.expires_at, now + entry.ttl)
        return CacheUsage(input=total - cached, cache_read=cached)

    def _write_implicit_breakpoint(
        self, scope: str, digest: str, total: int, ttl: float, now: float
    ) -> int:
        """Caches the whole prompt; returns its size when that is a new entry, else 0."""
        entry = self._entries.get((scope, digest))
        if entry is not None and entry.expires_at > now:
            entry.ttl = max(entry.ttl, ttl)
            entry.expires_at = max(entry.expires_at, now + entry.ttl)
            return 0
        self._entries[(scope, digest)] = _Entry(total, ttl, now + ttl)
        return total
