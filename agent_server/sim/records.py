"""The request log: one record per request, kept in memory and appended to a JSONL file.

A record holds the request body as received (headers, and so API keys, are never recorded), the
usage answered (in the API's own format, and normalised under `tokens`), the status, the stop
reason, the fault applied and which scenario step answered. It is the basis of every cache
measurement: `tokens.cacheRead / tokens.prompt` is a request's cache hit rate.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from agent_server.sim.cache import CacheUsage
from agent_server.sim.knowledge import FactCheck


@dataclass(frozen=True, slots=True)
class TokenCounts:
    input: int  # uncached prompt tokens
    cache_read: int
    cache_write_5m: int
    cache_write_1h: int
    output: int
    reasoning: int = 0

    @staticmethod
    def of(usage: CacheUsage, output: int, reasoning: int = 0) -> TokenCounts:
        return TokenCounts(
            usage.input, usage.cache_read, usage.cache_write_5m, usage.cache_write_1h, output,
            reasoning,
        )

    @property
    def cache_write(self) -> int:
        return self.cache_write_5m + self.cache_write_1h

    def plus(self, other: TokenCounts) -> TokenCounts:
        """Both passes of one answer (a provider's compaction, then the answer), billed."""
        return TokenCounts(
            self.input + other.input, self.cache_read + other.cache_read,
            self.cache_write_5m + other.cache_write_5m,
            self.cache_write_1h + other.cache_write_1h, self.output + other.output,
            self.reasoning + other.reasoning,
        )

    @property
    def prompt(self) -> int:
        return self.input + self.cache_read + self.cache_write

    def to_json(self) -> dict[str, int]:
        return {
            "input": self.input,
            "cacheRead": self.cache_read,
            "cacheWrite": self.cache_write,
            "cacheWrite5m": self.cache_write_5m,
            "cacheWrite1h": self.cache_write_1h,
            "output": self.output,
            "reasoning": self.reasoning,
            "prompt": self.prompt,
        }


@dataclass(frozen=True, slots=True)
class RequestRecord:
    time: float  # the simulator's clock
    method: str
    path: str
    api: str  # anthropic-messages, anthropic-count-tokens, openai-chat, openai-responses, ...
    status: int
    request: Any  # the body as received: parsed JSON, or the raw text when it is not JSON
    request_id: str
    index: int | None = None  # the model request's index under the fault plan
    model: str | None = None
    stream: bool = False
    usage: Any = None  # as answered, in the API's format
    tokens: TokenCounts | None = None
    stop_reason: str | None = None
    fault: str | None = None
    # scenario:<turn>:<step>, recovery:<turn>:<step>:<fact>, violation:<turn>:<step>:<fact>,
    # explore:<turn>:<step>, read-on:<turn>:<step>, fallback:<step>, summary
    source: str | None = None
    error: str | None = None
    knowledge: tuple[FactCheck, ...] = ()  # the facts the answered step needed, checked
    # Compactions the provider made while answering (Anthropic's compaction edit or
    # on-demand compaction; OpenAI's context_management or /responses/compact); `tokens` bills
    # them with the answer.
    compactions: int = 0
    # "<turn>:<step>" of the exploring steps the model did not take: the request showed
    # what they look for (exploration.py)
    skipped: tuple[str, ...] = ()

    @property
    def completed_step(self) -> str | None:
        """"<turn>:<step>" of the scenario step this request answered with, if it did."""
        source = self.source or ""
        return source.removeprefix("scenario:") if source.startswith("scenario:") else None

    def to_json(self) -> dict[str, Any]:
        return {
            "time": self.time,
            "index": self.index,
            "method": self.method,
            "path": self.path,
            "api": self.api,
            "status": self.status,
            "requestId": self.request_id,
            "model": self.model,
            "stream": self.stream,
            "request": self.request,
            "usage": self.usage,
            "tokens": self.tokens.to_json() if self.tokens is not None else None,
            "stopReason": self.stop_reason,
            "fault": self.fault,
            "source": self.source,
            "error": self.error,
            "knowledge": [check.to_json() for check in self.knowledge],
            "compactions": self.compactions,
            "skipped": list(self.skipped),
        }


class RequestLog:
    """Records in memory, and appended to a JSONL file when one is given."""

    def __init__(self, path: Path | None = None, *, keep: int | None = None) -> None:
        # `keep`: how many records stay in memory (None: all). A long-lived simulator, such as
        # the one the "sim" provider starts inside the language server, keeps a bounded tail.
        self.records: list[RequestRecord] = []
        self._keep = keep
        self._lock = threading.Lock()
        self._file: IO[str] | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = path.open("a", encoding="utf-8")

    def add(self, record: RequestRecord) -> None:
        with self._lock:
            self.records.append(record)
            if self._keep is not None and len(self.records) > self._keep:
                del self.records[: len(self.records) - self._keep]
            if self._file is not None:
                self._file.write(json.dumps(record.to_json(), ensure_ascii=False) + "\n")
                self._file.flush()

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
