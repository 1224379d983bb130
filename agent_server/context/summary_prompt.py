"""The summary prompt: how a compaction asks the model for a summary.

SUMMARY_REQUEST_MARKER appears in every summary request (the fresh prompt and the final
instruction appended to the cached context). The built-in simulator looks for it to answer
with a deterministic extractive summary; a real model just reads it as a heading.
"""

from __future__ import annotations

SUMMARY_REQUEST_MARKER = "<agent-server:summary-request>"
SUMMARY_OPEN = "<summary>"
SUMMARY_CLOSE = "</summary>"
# How a summary appears at the head of a compacted context.
SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:"
)
