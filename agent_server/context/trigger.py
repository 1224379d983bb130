"""When to compact: invariant 4 of DESIGN.md.

Compact when the estimate exceeds `context_window - reserve`; the reserve (room for the
model's answer and this turn's additions) defaults to the model's max output + 4096, clamped
to [8k, 20k]. Compact whatever the estimate when the last assistant message was cut off by
the window and no compaction followed it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent_server.errors import ConfigError
from agent_server.llm.messages import AssistantMessage
from agent_server.llm.models import ModelInfo
from agent_server.session.entries import CompactionEntry, Entry, MessageEntry

RESERVE_MARGIN = 4096
MIN_RESERVE = 8192
MAX_RESERVE = 20480
DEFAULT_KEEP_RECENT_TOKENS = 8000
DEFAULT_KEEP_RECENT_TURNS = 2
# The kept tail never takes more than this share of the threshold, so that summary plus tail
# sit well below it even on a small window (no compaction right after a compaction).
KEPT_SHARE_OF_THRESHOLD = 3


@dataclass(frozen=True, slots=True)
class CompactionSettings:
    """The `compaction.*` settings. `reserve_tokens` None means the model's default."""

    enabled: bool = True
    reserve_tokens: int | None = None
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS
    keep_recent_turns: int = DEFAULT_KEEP_RECENT_TURNS

    def __post_init__(self) -> None:
        if self.reserve_tokens is not None and self.reserve_tokens < 0:
            raise ConfigError(
                f"compaction.reserveTokens must be 0 or more, not {self.reserve_tokens}"
            )
        if self.keep_recent_tokens < 0:
            raise ConfigError(
                f"compaction.keepRecentTokens must be 0 or more, not {self.keep_recent_tokens}"
            )
        if self.keep_recent_turns < 1:
            raise ConfigError(
                f"compaction.keepRecentTurns must be 1 or more, not {self.keep_recent_turns}"
            )


def reserve_tokens(model: ModelInfo, settings: CompactionSettings) -> int:
    """Tokens kept free below the window: the setting, else max output + 4096 in [8k, 20k]."""
    if settings.reserve_tokens is not None:
        return settings.reserve_tokens
    return min(max(model.max_output + RESERVE_MARGIN, MIN_RESERVE), MAX_RESERVE)


def compaction_threshold(model: ModelInfo, settings: CompactionSettings) -> int:
    """The estimate above which a compaction runs: context window - reserve."""
    reserve = reserve_tokens(model, settings)
    if reserve >= model.context_window:
        raise ConfigError(
            f"compaction.reserveTokens ({reserve}) must be smaller than the context window "
            f"of {model.id} ({model.context_window}); lower it or remove the setting"
        )
    return model.context_window - reserve


def should_compact(tokens: int, model: ModelInfo, settings: CompactionSettings) -> bool:
    """Whether an estimate of `tokens` calls for a compaction (never when disabled)."""
    return settings.enabled and tokens > compaction_threshold(model, settings)


def max_kept_tokens(model: ModelInfo, settings: CompactionSettings) -> int:
    """The cap on a compaction's kept tail for `find_cut_point(max_kept_tokens=...)`:
    keep_recent_tokens, but at most a third of the threshold."""
    cap = compaction_threshold(model, settings) // KEPT_SHARE_OF_THRESHOLD
    return min(settings.keep_recent_tokens, cap)


def has_uncompacted_truncation(entries: Sequence[Entry]) -> bool:
    """The last assistant message on the path was cut off by the context window
    (stop reason contextOverflow) and no compaction entry follows it.

    `entries` is a root-to-leaf path or its tail (Ledger.projection_entries).
    """
    for entry in reversed(entries):
        if isinstance(entry, CompactionEntry):
            return False
        if isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage):
            return entry.message.stop_reason == "contextOverflow"
    return False
