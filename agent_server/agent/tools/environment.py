"""What a tool's process gets to see of the server's environment.

A command the agent runs never receives a secret it could print, encode or send somewhere:

- the provider keys (any variable whose value is one of the session's secrets) never, even
  when listed in `tools.env.pass`;
- variables whose name says secret: a name part KEY, KEY_ID, TOKEN, SECRET, PASSWORD, PASSWD,
  PASS, PASSPHRASE, CREDENTIAL(S) or PRIVATE_KEY (`GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`,
  `AWS_ACCESS_KEY_ID`, `NPM_TOKEN`, `DB_PASSWORD`, `OPENAI_API_KEY`, ...);
- variables whose name says a URL with a credential in it: ending in DSN, WEBHOOK or
  WEBHOOK_URL (`SENTRY_DSN`, `SLACK_WEBHOOK_URL`);
- variables whose value looks like a key (`sk-...`, `ghp_...`, `AKIA...`) or holds a URL
  with a credential in it, whatever the name (redaction's `URL_CREDENTIAL`): a userinfo
  (`postgres://user:pw@host`, Sentry's `https://<key>@o1.ingest.sentry.io/42`), a token-like
  query parameter (`?token=...`, `access_token=`, `api_key=`, `key=`, `sig=`), a webhook
  (`https://hooks.slack.com/services/...`, `discord.com/api/webhooks/...`, ...); an
  ordinary URL (`http://proxy:3128`, `https://pypi.org/simple`) passes;

unless the user lists the name in the setting `tools.env.pass` (names or `*` globs).

Reading the server's own environment through /proc is a separate matter: see sandbox.py.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from agent_server.redaction import holds_url_credential, looks_like_key

_SECRET_NAME = re.compile(
    r"(?:^|_)(?:API_?KEY|KEY|KEY_ID|TOKEN|SECRET|PASSWORD|PASSWD|PASS|PASSPHRASE|"
    r"CREDENTIALS?|PRIVATE_KEY)(?:$|_)"
    r"|(?:^|_)(?:DSN|WEBHOOK|WEBHOOK_URL)$"
)


@dataclass(frozen=True, slots=True)
class ToolEnvironment:
    env: dict[str, str]
    withheld: tuple[str, ...]  # names left out, sorted (for the log; never their values)


def secret_looking(name: str, value: str) -> bool:
    """Whether a variable looks like it holds a secret, by its name or its value."""
    return (
        _SECRET_NAME.search(name.upper()) is not None
        or looks_like_key(value)
        or holds_url_credential(value)
    )


def tool_environment(
    environ: Mapping[str, str], secrets: Iterable[str] = (), passed: Iterable[str] = ()
) -> ToolEnvironment:
    """`environ` without secrets: the provider keys always, secret-looking variables unless
    their name matches one of `passed` (exact names or globs, case-sensitive)."""
    secret_values = {s for s in secrets if s}
    patterns = tuple(passed)
    env: dict[str, str] = {}
    withheld: list[str] = []
    for name, value in environ.items():
        holds_key = any(secret in value for secret in secret_values)
        listed = any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)
        if holds_key or (secret_looking(name, value) and not listed):
            withheld.append(name)
        else:
            env[name] = value
    return ToolEnvironment(env, tuple(sorted(withheld)))
