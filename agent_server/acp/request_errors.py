"""The agent's errors as the JSON-RPC errors an ACP client gets."""

from __future__ import annotations

from acp import RequestError

from agent_server import protocol
from agent_server.acp.auth import auth_required
from agent_server.errors import AgentServerError, MissingApiKeyError, SessionNotFoundError
from agent_server.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS

RESOURCE_NOT_FOUND = -32002


def request_error(error: AgentServerError) -> RequestError:
    """An agent error as a JSON-RPC error: ACP's "resource not found" for an unknown session,
    "authentication required" for a missing API key, the editor protocol's code for the
    others it names (a session open in another process: -33005 SessionLocked; docs/protocol.md),
    Internal error otherwise; the message says what to do, `data.code` names the error."""
    if isinstance(error, MissingApiKeyError):
        return auth_required(error)
    if isinstance(error, SessionNotFoundError):
        return RequestError(RESOURCE_NOT_FOUND, error.message, {"code": error.code})
    code = protocol.ERROR_CODES[error.rpc] if error.rpc else INTERNAL_ERROR
    return RequestError(code, error.message, {"code": error.code})


def invalid_params(message: str) -> RequestError:
    return RequestError(INVALID_PARAMS, message)
