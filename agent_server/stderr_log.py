"""Logging to stderr with bounded lines (stdout is the LSP stream).

A log record's message is cut to MAX_MESSAGE_CHARS with its control characters escaped, so
that a value from a client or a model (a multi-megabyte param, a method name holding a
newline) can neither flood the log nor forge a line; a record with a traceback is cut to
MAX_RECORD_CHARS in all. `shorten` is the one way to put an outside value into a message.
"""

from __future__ import annotations

import logging
import re
import sys

MAX_MESSAGE_CHARS = 2000
MAX_RECORD_CHARS = 8000
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u2028\u2029]")


def shorten(text: str, limit: int = 200) -> str:
    """`text` cut to about `limit` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters]"


def escape_controls(text: str) -> str:
    r"""Control characters (newlines included) as visible escapes (`\n`, `\x1b`)."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text.replace("\n", "\\n"))


class BoundedFormatter(logging.Formatter):
    """One line per message (cut and escaped); tracebacks kept but cut."""

    def format(self, record: logging.LogRecord) -> str:
        try:
            message = record.getMessage()
        except Exception as exc:  # a bad format string must not lose the record
            message = f"{record.msg!r} (unformattable: {exc})"
        bounded = logging.makeLogRecord(record.__dict__)
        bounded.msg = shorten(escape_controls(message), MAX_MESSAGE_CHARS)
        bounded.args = None
        return shorten(super().format(bounded), MAX_RECORD_CHARS)


def configure_logging(level: str = "WARNING") -> None:
    """Log to stderr at `level` (a name such as INFO), every line bounded."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(BoundedFormatter(FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(getattr(logging, level.upper(), logging.WARNING))
