"""How an ACP client learns that agent-server needs an API key, and which.

ACP 1.7's stable schema knows two kinds of auth method: `agent` (the agent authenticates
itself when the client calls `authenticate`) and `terminal` (the client runs the agent again,
interactively, for a login screen); the ACP agent registry accepts an agent that offers one of
these. agent-server's key is read from the environment the editor starts it with (its `env`
for the agent), or kept by `agent-server login`: it offers an `agent` method, "api-key",
named after the variable the configured provider reads, and a `terminal` method, "login",
which runs the agent with the argument `login` (`agent-server acp login`) to paste the key.
`authenticate` (either method) checks that the key is there and otherwise answers ACP's
"authentication required" (-32000) with what to set, as `session/new` does without a key
(server.py), so that an editor can show the methods. The key never crosses the protocol.
"""

from __future__ import annotations

from acp import RequestError
from acp.schema import AuthMethodAgent, TerminalAuthMethod

from agent_server.agent.model_setup import connect
from agent_server.agent.settings import AgentSettings
from agent_server.errors import ConfigError, MissingApiKeyError

API_KEY_METHOD = "api-key"
LOGIN_METHOD = "login"  # the client runs the agent with `login` in a terminal
AUTH_REQUIRED = -32000


def auth_methods(settings: AgentSettings) -> list[AuthMethodAgent | TerminalAuthMethod]:
    variable = settings.key_variable
    where = (
        f"Set {variable} in the agent's environment (the editor's env for agent-server)"
        if variable
        else "The configured provider needs no key"
    )
    return [
        AuthMethodAgent(
            id=API_KEY_METHOD,
            name="API key from the environment",
            description=f"{where}; the provider and the variable are settings (apiKeyEnv).",
        ),
        TerminalAuthMethod(
            id=LOGIN_METHOD,
            type="terminal",
            name="Log in with an API key",
            description="Paste the key in a terminal; it is kept for you (readable by you "
            "alone) and used when the variable is not set.",
            args=["login"],
        ),
    ]


def authenticate(method_id: str, settings: AgentSettings) -> None:
    """Succeeds when the configured provider has its key (or needs none)."""
    if method_id not in (API_KEY_METHOD, LOGIN_METHOD):
        raise RequestError(
            -32602,
            f"unknown authentication method {method_id!r}; use {API_KEY_METHOD!r} or "
            f"{LOGIN_METHOD!r}",
        )
    try:
        connect(settings)
    except MissingApiKeyError as error:
        raise auth_required(error) from error
    except ConfigError as error:
        raise RequestError(-32602, error.message, {"code": error.code}) from error


def auth_required(error: MissingApiKeyError) -> RequestError:
    return RequestError(AUTH_REQUIRED, error.message, {"code": error.code})
