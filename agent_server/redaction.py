"""Secrets out of text: the session's own secrets (the provider key) and anything shaped like a
well-known key or token, replaced by `[redacted]`.

`redact` works on a whole text. `StreamRedactor` works on a text that arrives in pieces (a
command's output): it holds back the end of a piece while it could still be the start of a
secret, so a key split across two pieces is caught like a whole one, and every sink that
receives the pieces (the stream to the editor, the saved full output, the model's copy)
receives the same redacted text.

Redaction is the second line of defence: the first is that tools never get the keys (see
agent/tools/environment.py). Encoded forms (base64, reversed, a part of a key) are not
recognised here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

REDACTED = "[redacted]"

# Shapes of keys and tokens that are secret wherever they appear.
KEY_PATTERN = re.compile(
    r"\b(?:"
    r"sk-[A-Za-z0-9_\-]{8,}"  # Anthropic (sk-ant-...), OpenAI (sk-..., sk-proj-...)
    r"|gh[pousr]_[A-Za-z0-9]{20,}"  # GitHub tokens
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|glpat-[A-Za-z0-9_\-]{20,}"  # GitLab
    r"|xox[abposr]-[A-Za-z0-9\-]{10,}"  # Slack
    r"|AKIA[0-9A-Z]{16}"  # AWS access key id
    r"|AIza[0-9A-Za-z_\-]{35}"  # Google API key
    r")"
)
# Characters a key can be made of: a run of them at the end of a piece may continue.
_KEY_CHAR_STRING = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
_KEY_CHARS = frozenset(_KEY_CHAR_STRING)


def redact(text: str, *secrets: str) -> str:
    """`text` with the given secrets, and anything shaped like an API key, replaced."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    return KEY_PATTERN.sub(REDACTED, text)


def looks_like_key(value: str) -> bool:
    """Whether `value` holds something shaped like a key or token."""
    return KEY_PATTERN.search(value) is not None


class StreamRedactor:
    """Redacts text that arrives in pieces as if it were one text.

    `feed(piece)` returns what can be passed on now; `finish()` returns what was held back.
    At most `max_hold` characters are held: the longest tail that could still grow into a
    secret (a proper prefix of one) or a key (a trailing run of key characters). A run of
    key characters longer than that is passed on, and if it was a key, its continuation in
    the next pieces is dropped too.
    """

    def __init__(self, secrets: Sequence[str] = (), max_hold: int = 4096) -> None:
        self._secrets = tuple(sorted({s for s in secrets if s}, key=len, reverse=True))
        self._max_hold = max_hold
        self._held = ""
        self._in_key = False  # the last text passed on ended inside a redacted key

    def feed(self, piece: str) -> str:
        text, self._held = self._held + piece, ""
        if self._in_key:
            rest = text.lstrip(_KEY_CHAR_STRING)
            if not rest:
                return ""  # all of it continues a key already redacted
            text, self._in_key = rest, False
        cut = self._safe_length(text)
        out, self._held = text[:cut], text[cut:]
        redacted = redact(out, *self._secrets)
        if cut == len(text) and out and out[-1] in _KEY_CHARS:
            # A run of key characters too long to hold was passed on: if it ended as a
            # key, whatever continues it in the next pieces is part of that key.
            self._in_key = redacted.endswith(REDACTED)
        return redacted

    def finish(self) -> str:
        text, self._held, self._in_key = self._held, "", False
        return redact(text, *self._secrets)

    def _safe_length(self, text: str) -> int:
        """How much of `text` can be redacted and passed on now: no secret or key may still
        be arriving at the cut, or cross it."""
        safe = len(text)
        for secret in self._secrets:
            # The longest proper prefix of the secret that ends the text.
            for length in range(min(len(secret) - 1, len(text)), 0, -1):
                if text.endswith(secret[:length]):
                    safe = min(safe, len(text) - length)
                    break
        run = len(text)
        while run > 0 and text[run - 1] in _KEY_CHARS:
            run -= 1
        if len(text) - run <= self._max_hold:
            safe = min(safe, run)
        moved = True
        while moved and safe:
            moved = False
            start = safe  # never cut inside a run of key characters
            while (
                0 < start < len(text)
                and text[start - 1] in _KEY_CHARS
                and text[start] in _KEY_CHARS
                and safe - start < self._max_hold
            ):
                start -= 1
            if start != safe:
                safe, moved = start, True
            for secret in self._secrets:
                found = text.find(secret, max(0, safe - len(secret) + 1))
                if found != -1 and found < safe < found + len(secret):
                    safe, moved = found, True
            for match in KEY_PATTERN.finditer(text, max(0, safe - self._max_hold - 64)):
                if match.start() < safe < match.end():
                    safe, moved = match.start(), True
        return safe
