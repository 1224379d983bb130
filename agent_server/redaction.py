"""Secrets out of text: the session's own secrets (the provider key), and anything that looks
like a secret, replaced by `[redacted]`.

What looks like a secret:

- a well-known key or token format: Anthropic and OpenAI (`sk-...`), GitHub (`ghp_...`,
  `github_pat_...`), GitLab (`glpat-...`), Slack (`xox?-...`), AWS access key ids
  (`AKIA...`, `ASIA...`), Google (`AIza...`, `ya29....`), Stripe (`sk_live_...`), npm
  (`npm_...`), PyPI (`pypi-...`), Hugging Face (`hf_...`), a JWT (`eyJ...eyJ...`);
- a private key block (`-----BEGIN ... PRIVATE KEY-----` to its `END` line, or to the end);
- a credential in a URL (`URL_CREDENTIAL`), with the rest of the URL kept: its userinfo
  (`postgres://[redacted]@db/app`; in an http(s) URL a user alone too, which is a token
  there: Sentry's DSN `https://<key>@o1.ingest.sentry.io/42`, `https://<token>@github.com`),
  the value of a token-like query parameter (`?token=`, `access_token=`, `api_key=`, `key=`,
  `sig=`, `X-Amz-Signature=`, ...), and the path of a webhook, which is its secret (Slack's
  `hooks.slack.com/services/...`, Discord's `discord.com/api/webhooks/...`, Microsoft
  Teams' `outlook.office.com/webhook/...` and `*.webhook.office.com/...`, Zapier's
  `hooks.zapier.com/...`);
- the value assigned to a secret-looking name (`*SECRET*`, `*TOKEN*`, `*PASSWORD*`,
  `*PASSWD*`, `*PASSPHRASE*`, `*CREDENTIAL*`, `*_KEY`, `*API_KEY*`, `*ACCESS_KEY*`, ...)
  in an environment file, a config file or a string literal (`NAME=value`, `NAME: value`,
  `"name": "value"`, `name = "value"`; unquoted only as a whole line's value, where it is
  data), when the value is high-entropy (at least 16 characters of two kinds or more among
  lower case, upper case and digits, about 3.5 bits a character: generated, not chosen), or,
  for password, secret and passphrase names, any literal of 8 characters or more that is
  not a placeholder (`${VAR}`, `<your-password>`, `changeme`, ...). Only the value goes:
  the name stays, so that the model still sees which settings there are.

Not recognised: a secret encoded (base64, reversed, split), a short or dictionary-word
value assigned to a key or token name, a secret in a free-form sentence, a value computed in
code (`password = vault.get(...)`), which is code, not a secret.

`redact` works on a whole text. `StreamRedactor` works on a text that arrives in pieces (a
command's output): it holds back the end of a piece while it could still be the start of a
secret (an unfinished line, a run of key characters, a prefix of a session secret, an open
private key block, a URL not ended yet), so a secret split across two pieces is caught like
a whole one, and every sink that receives the pieces (the stream to the editor, the saved
full output, the model's copy) receives the same redacted text.

Redaction is the second line of defence: the first is that tools never get the keys (see
agent/tools/environment.py), and that the file tools ask before reading files that commonly
hold secrets (agent/tools/paths.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

REDACTED = "[redacted]"
REDACTION_NOTE = (
    "[Values that look like secrets (keys, tokens, passwords) were replaced by [redacted] "
    "before reaching you; the user sees them in their own files.]"
)

# Shapes of keys and tokens that are secret wherever they appear.
KEY_PATTERN = re.compile(
    r"\b(?:"
    r"sk-[A-Za-z0-9_\-]{8,}"  # Anthropic (sk-ant-...), OpenAI (sk-..., sk-proj-...)
    r"|gh[pousr]_[A-Za-z0-9]{20,}"  # GitHub tokens
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|glpat-[A-Za-z0-9_\-]{20,}"  # GitLab
    r"|xox[abposr]-[A-Za-z0-9\-]{10,}"  # Slack
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"  # AWS access key ids (long-term, temporary)
    r"|AIza[0-9A-Za-z_\-]{35}"  # Google API key
    r"|ya29\.[0-9A-Za-z_\-]{20,}"  # Google OAuth access token
    r"|[sr]k_(?:live|test)_[0-9A-Za-z]{16,}"  # Stripe secret and restricted keys
    r"|npm_[A-Za-z0-9]{36}"  # npm
    r"|pypi-[A-Za-z0-9_\-]{50,}"  # PyPI
    r"|hf_[A-Za-z0-9]{30,}"  # Hugging Face
    r"|eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"  # a JWT
    r")"
)
# Characters a key can be made of: a run of them at the end of a piece may continue.
_KEY_CHAR_STRING = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-."
_KEY_CHARS = frozenset(_KEY_CHAR_STRING)
_PRIVATE_KEY_BEGIN = re.compile(r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY-----")
_PRIVATE_KEY_END = re.compile(r"-----END[A-Z0-9 ]{0,40}PRIVATE KEY-----")
_PRIVATE_KEY_BLOCK = re.compile(
    _PRIVATE_KEY_BEGIN.pattern + r"(?:.*?" + _PRIVATE_KEY_END.pattern + r"|.*\Z)", re.S
)
# A name starts after a character no name holds (so a long run is tried once, not at each
# of its characters) and is at most 80 characters long.
_SECRET_NAME = (
    r"(?<![A-Za-z0-9_.\-])[A-Za-z0-9_.\-]{0,40}?(?:secret|token|passw(?:or)?d|passphrase"
    r"|credential|api_?key|access_?key|private_?key|auth_?key|_key\b|-key\b)[A-Za-z0-9_.\-]{0,40}"
)
# A quoted literal assigned in any syntax: "name": "value" (JSON), name = "value" (code,
# TOML), NAME='value' (a shell). An unquoted value only as a whole line's value, where it is
# data, not code: NAME=value (an environment file, no spaces around =), NAME: value (YAML),
# also behind grep's `path:` or `path:line:`.
_ASSIGNMENT = re.compile(
    r"(?P<name>" + _SECRET_NAME + r")[\"']?[ \t]*(?::=|=|:)[ \t]*"
    r"(?P<quote>[\"'`])(?P<quoted>[^\"'`\n]{8,}?)(?P=quote)"
    r"|^(?:[^\s:=]*:(?:\d+[:-])?)?[ \t]*(?:export[ \t]+)?(?P<env>" + _SECRET_NAME
    + r")(?:=|:[ \t]+)"
    r"(?P<bare>[^\s\"'`,;()\[\]{}<>]{8,})[ \t]*(?=$|[ \t]#)",
    re.I | re.M,
)
_SECRET_WORDS = ("secret", "token", "passw", "passphrase", "credential", "key")
_PASSWORD_NAME = re.compile(r"passw(?:or)?d|secret|passphrase", re.I)
_PLACEHOLDER = re.compile(
    r"^(?:\$|%\(|<|\{\{|\[)|your[_\-]|placeholder|changeme|redacted|xxxx|\*\*\*"
    r"|^(?:none|null|true|false|undefined|password|secret)$",
    re.I,
)
# Credentials in a URL (see the module's docstring). A scheme starts after a character no
# scheme holds (so a long run is tried once) and is at most 31 characters long.
_WEBHOOK_PATH = (
    r"hooks\.slack\.com/(?:services|workflows|triggers)/"
    r"|(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/"
    r"|outlook\.office(?:365)?\.com/webhook(?:b2)?/"
    r"|[A-Za-z0-9\-]{1,63}\.webhook\.office\.com/"
    r"|hooks\.zapier\.com/"
)
_TOKEN_PARAMETER = (
    r"[A-Za-z0-9_\-]{0,40}?(?:token|secret|signature|passw(?:or)?d|api[_\-]?key)"
    r"|key|sig|pwd|auth"
)
URL_CREDENTIAL = re.compile(
    r"(?<![A-Za-z0-9+.\-])(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]{0,30})://(?:"
    r"(?P<userinfo>[^\s/?#\"'`<>]+)@"
    r"|(?P<hook>" + _WEBHOOK_PATH + r")(?P<path>[^\s?#\"'`<>]+))"
    r"|(?<!&)[?&](?P<parameter>" + _TOKEN_PARAMETER + r")="
    r"(?P<value>[^\s&#\"'`<>()\[\]{}$;,]+)",
    re.I,
)
# Schemes where a user alone (no password) is a credential: the key of a Sentry DSN, a token
# in a clone URL. Elsewhere it is a login name (`ssh://git@github.com/...`).
_TOKEN_USER_SCHEMES = frozenset({"http", "https", "ws", "wss"})


def _url_secret(match: re.Match[str]) -> str | None:
    """The group of a `URL_CREDENTIAL` match that is a secret, or None when there is none
    (a login name alone, a placeholder: `<user>:<password>@`, `?key=YOUR_KEY`). A webhook's
    path is its secret whatever it looks like."""
    if match.group("path") is not None:
        return "path"
    group = "userinfo" if match.group("userinfo") is not None else "value"
    secret = match.group(group)
    login_name = group == "userinfo" and ":" not in secret and (
        match.group("scheme").lower() not in _TOKEN_USER_SCHEMES
    )
    return None if login_name or _PLACEHOLDER.search(secret) else group


def _redact_url(match: re.Match[str]) -> str:
    group = _url_secret(match)
    if group is None:
        return match.group(0)
    start, end = match.start(group) - match.start(), match.end(group) - match.start()
    whole = match.group(0)
    return whole[:start] + REDACTED + whole[end:]


def holds_url_credential(value: str) -> bool:
    """Whether `value` holds a URL with a credential in it (see `URL_CREDENTIAL`)."""
    return any(_url_secret(m) is not None for m in URL_CREDENTIAL.finditer(value))


def redact(text: str, *secrets: str) -> str:
    """`text` with the given secrets, and anything that looks like a secret, replaced."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    if "PRIVATE KEY-----" in text:
        text = _PRIVATE_KEY_BLOCK.sub(REDACTED, text)
    text = KEY_PATTERN.sub(REDACTED, text)
    if "://" in text or "=" in text:
        text = URL_CREDENTIAL.sub(_redact_url, text)
    if not _has_secret_word(text):
        return text
    return "\n".join(
        _ASSIGNMENT.sub(_assigned, line) if _has_secret_word(line) else line
        for line in text.split("\n")
    )


def _has_secret_word(text: str) -> bool:
    """A fast first look (a substring search): could `text` hold a secret-named setting?"""
    lowered = text.lower()
    return any(word in lowered for word in _SECRET_WORDS)


def _assigned(match: re.Match[str]) -> str:
    group = "quoted" if match.group("quote") else "bare"
    value = match.group(group)
    if not secret_value(match.group("name") or match.group("env"), value):
        return match.group(0)
    start = match.start(group) - match.start()
    whole = match.group(0)
    return whole[:start] + REDACTED + whole[start + len(value) :]


def secret_value(name: str, value: str) -> bool:
    """Whether `value`, assigned to the secret-looking `name`, looks like a secret."""
    if REDACTED in value or _PLACEHOLDER.search(value) or len(set(value)) < 4:
        return False
    if high_entropy(value):
        return True
    return _PASSWORD_NAME.search(name) is not None and len(value) >= 8


def high_entropy(value: str) -> bool:
    """At least 16 characters of two kinds or more (lower case, upper case, digits), with
    about 3.5 bits a character (3 for hexadecimal): generated, not written."""
    if len(value) < 16:
        return False
    kinds = sum(any(test(c) for c in value) for test in (str.islower, str.isupper, str.isdigit))
    if kinds < 2:
        return False
    counts = {c: value.count(c) for c in set(value)}
    entropy = -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())
    hexadecimal = all(c in "0123456789abcdefABCDEF" for c in value)
    return entropy >= (3.0 if hexadecimal else 3.5)


def looks_like_key(value: str) -> bool:
    """Whether `value` holds something shaped like a key or token."""
    return KEY_PATTERN.search(value) is not None


_BLOCK_HOLD = 16384  # the longest private key block held whole (a 4096-bit RSA key: 3.3 KB)


def _open_block(text: str) -> int | None:
    """Where the last private key block of `text` begins, when its END has not come."""
    begin = None
    for found in _PRIVATE_KEY_BEGIN.finditer(text):
        begin = found
    if begin is None or _PRIVATE_KEY_END.search(text, begin.end()):
        return None
    return begin.start()


def _open_url(text: str, max_hold: int) -> int | None:
    """Where a URL that ends the text begins (no space after it yet), or a scheme whose
    `://` may be arriving (`https:`, `https:/`), when it is at most `max_hold` characters
    long."""
    scheme = _UNFINISHED_SCHEME.search(text, max(0, len(text) - 40))
    if scheme is not None and len(text) - scheme.start() <= max_hold:
        return scheme.start()
    at = text.rfind("://", max(0, len(text) - max_hold))
    if at == -1 or _URL_END.search(text, at) is not None:
        return None
    start = at
    while start > max(0, at - 31) and text[start - 1] in _SCHEME_CHARS:
        start -= 1
    return start


_URL_END = re.compile(r"[\s\"'`<>]")
_UNFINISHED_SCHEME = re.compile(r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{0,30}:/?\Z")
_SCHEME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+.-")


class StreamRedactor:
    """Redacts text that arrives in pieces as if it were one text.

    `feed(piece)` returns what can be passed on now; `finish()` returns what was held back.
    At most `max_hold` characters are held: the longest tail that could still grow into a
    secret (a proper prefix of one), a key (a trailing run of key characters), an
    assignment (an unfinished line) or a URL's credential (a URL not ended yet). A run of key
    characters longer than that is passed on, and if it was a key, its continuation in the
    next pieces is dropped too. A private key
    block is held until its END line (up to 16 KB; a longer one is dropped to its end).
    """

    def __init__(self, secrets: Sequence[str] = (), max_hold: int = 4096) -> None:
        self._secrets = tuple(sorted({s for s in secrets if s}, key=len, reverse=True))
        self._max_hold = max_hold
        self._held = ""
        self._in_key = False  # the last text passed on ended inside a redacted key
        self._in_block = False  # inside a private key block too long to hold: dropping

    def feed(self, piece: str) -> str:
        text, self._held = self._held + piece, ""
        if self._in_block:
            end = _PRIVATE_KEY_END.search(text)
            if end is None:
                self._held = text[-64:]  # an END line may be arriving
                return ""
            text, self._in_block = text[end.end() :], False
        begin = _open_block(text)
        if begin is not None and len(text) - begin > _BLOCK_HOLD:
            # A private key block longer than any key: what comes before it is passed on,
            # the block is redacted as one and dropped until its END line.
            self._in_block = True
            self._held = text[-64:]
            return redact(text[:begin], *self._secrets) + REDACTED
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
        if self._in_block:
            self._in_block = False
            return ""
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
        # An unfinished line may still be an assignment to a secret-looking name.
        line = max(text.rfind("\n"), text.rfind("\r")) + 1
        if len(text) - line <= self._max_hold:
            safe = min(safe, line)
        begin = _open_block(text)  # a private key block whose END has not come yet
        if begin is not None:
            safe = min(safe, begin)
        url = _open_url(text, self._max_hold)  # its userinfo or query may still be arriving
        if url is not None:
            safe = min(safe, url)
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
            for match in URL_CREDENTIAL.finditer(text, max(0, safe - self._max_hold - 64)):
                if match.start() < safe < match.end():
                    safe, moved = match.start(), True
            if "PRIVATE KEY-----" in text:  # never cut a private key block
                for match in _PRIVATE_KEY_BLOCK.finditer(text):
                    if match.start() < safe < match.end():
                        safe, moved = match.start(), True
        return safe
