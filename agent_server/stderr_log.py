"""Logging to stderr with bounded lines (stdout is the LSP stream).

Each record is shown literally (`literal.LiteralLogFormatter`: its own line breaks and
control characters escaped, so a value from a client or a model cannot forge a line), and
cut: the message to MAX_MESSAGE_CHARS, the whole record (with a traceback) to
MAX_RECORD_CHARS, so that a multi-megabyte param cannot flood the log. `shorten` is the one
way to put an outside value into a message or an answer.
"""

from __future__ import annotations

import logging
import sys

from agent_server.literal import LiteralLogFormatter

MAX_MESSAGE_CHARS = 2000
MAX_RECORD_CHARS = 8000
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def shorten(text: str, limit: int = 200) -> str:
    """`text` cut to about `limit` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters]"


class BoundedLogFormatter(LiteralLogFormatter):
    """Literal log lines, cut: one bounded line per message, tracebacks kept but cut."""

    def format(self, record: logging.LogRecord) -> str:
        try:
            message = record.getMessage()
        except Exception as exc:  # a bad format string must not lose the record
            message = f"{record.msg!r} (unformattable: {exc})"
        bounded = logging.makeLogRecord(record.__dict__)
        bounded.msg = shorten(message, MAX_MESSAGE_CHARS)
        bounded.args = None
        return shorten(super().format(bounded), MAX_RECORD_CHARS)


def configure_logging(level: str = "WARNING") -> None:
    """Log to stderr at `level` (a name such as INFO), every line literal and bounded."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(BoundedLogFormatter(FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(getattr(logging, level.upper(), logging.WARNING))
