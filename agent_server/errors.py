"""The one exception hierarchy of agent-server.

Every message says what went wrong and what to do about it. No message, attribute or repr
ever holds an API key: provider errors are built from the provider's error body, which does
not echo keys, and `redact` scrubs anything that looks like one before it is shown.
"""

from __future__ import annotations

# Redaction lives in agent_server.redaction; it is re-exported here, where error messages
# have always found it.
from agent_server.redaction import redact as redact


class AgentServerError(Exception):
    """Base of every error agent-server raises on purpose. `rpc`: the name of its JSON-RPC
    code in the editor protocol's table (protocol.ERROR_CODES; the ACP agent answers with the
    same), None for an internal error."""

    code = "agent_error"
    rpc: str | None = None

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# --- configuration --------------------------------------------------------------------------


class ConfigError(AgentServerError):
    code = "config_error"
    rpc = "ConfigurationError"


class MissingApiKeyError(ConfigError):
    code = "missing_api_key"

    def __init__(self, variable: str, provider: str) -> None:
        super().__init__(
            f"No API key for {provider}: set the environment variable {variable}, or run "
            f"`agent-server login` to keep one for it (or point the setting 'apiKeyEnv' at the "
            f"variable that holds it). "
            f'To try agent-server offline, set "provider": "sim" to use the built-in simulator.'
        )
        self.variable = variable
        self.provider = provider


class UnknownModelError(ConfigError):
    code = "unknown_model"


# --- providers ------------------------------------------------------------------------------


class ProviderError(AgentServerError):
    """A model call failed. `retryable` says whether the same call may succeed later.

    The message of a retryable failure says it will be retried (the retry notices show it);
    `happened` (what went wrong) and `if_retries_fail` (what the user can do) make the
    message for when the retries are used up (`retries_used_up`).
    """

    code = "provider_error"
    retryable = False

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        provider: str = "",
        error_type: str | None = None,
        retry_after: float | None = None,
        happened: str | None = None,
        if_retries_fail: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.provider = provider
        self.error_type = error_type
        self.retry_after = retry_after
        self.happened = happened
        self.if_retries_fail = if_retries_fail

    def retries_used_up(self, attempts: int) -> ProviderError:
        """This failure as the last word after `attempts` attempts: what went wrong and what
        to do, with no promise of another try."""
        tries = f"{attempts} attempt" + ("s" if attempts != 1 else "")
        todo = self.if_retries_fail or "Try again later, or switch to another model."
        return self.last_word(f"Gave up after {tries}. {todo}")

    def last_word(self, then: str) -> ProviderError:
        """This failure, not to be retried: what went wrong, then `then` (why no other try
        comes, and what to do), with the same status, provider and type."""
        final = type(self)(
            f"{self.happened or self.message} {then}",
            status=self.status,
            provider=self.provider,
            error_type=self.error_type,
            retry_after=self.retry_after,
        )
        final.__cause__ = self
        return final


class RateLimitError(ProviderError):
    code = "rate_limited"
    retryable = True


class OverloadedError(ProviderError):
    code = "overloaded"
    retryable = True


class ProviderServerError(ProviderError):
    code = "provider_server_error"
    retryable = True


class ProviderConnectionError(ProviderError):
    """The connection failed or the stream was dropped before the answer was complete."""

    code = "connection_error"
    retryable = True


class ContextOverflowError(ProviderError):
    """The prompt does not fit the model's context window. `server_window` is the window
    the server said it has, when it said one ("maximum context length is 4096 tokens")."""

    code = "context_overflow"
    server_window: int | None = None


class RequestTooLargeError(ProviderError):
    """One request is larger than the account's rate limit allows (OpenAI's 429 or Groq's 413
    "Request too large ... tokens per minute (TPM): Limit 6000, Requested 14810").

    Not retried: the same request is refused again whatever the wait. Only a smaller request
    (a compacted session) or a model or tier with a higher limit helps.
    """

    code = "request_too_large"


class AuthenticationError(ProviderError):
    code = "authentication_failed"


class InvalidRequestError(ProviderError):
    code = "invalid_request"


class ModelNotFoundError(ProviderError):
    code = "model_not_found"


class PermissionDeniedError(ProviderError):
    """The key is valid but may not use this model or feature."""

    code = "permission_denied"


class QuotaExceededError(ProviderError):
    """The account is out of credit or over its spending limit: waiting will not help."""

    code = "quota_exceeded"


# --- context --------------------------------------------------------------------------------


class PromptTooLargeError(AgentServerError):
    """A prompt that cannot fit in a request even alone; it was not sent. `entry_id` is the
    ledger entry that holds it."""

    code = "prompt_too_large"

    def __init__(self, message: str, *, entry_id: str | None = None) -> None:
        super().__init__(message)
        self.entry_id = entry_id


# --- sessions -------------------------------------------------------------------------------


class SessionError(AgentServerError):
    code = "session_error"


class SessionNotFoundError(SessionError):
    code = "session_not_found"
    rpc = "UnknownSession"


class SessionLockedError(SessionError):
    code = "session_locked"
    rpc = "SessionLocked"


class SessionBusyError(SessionError):
    code = "session_busy"
    rpc = "SessionBusy"


class EntryNotFoundError(SessionError):
    code = "entry_not_found"
    rpc = "UnknownEntry"


class LedgerFormatError(SessionError):
    code = "ledger_format"
    rpc = "SessionDamaged"


class PinError(SessionError):
    """A pin refused (empty, too long, over the pins' budget) or not found."""

    code = "pin_refused"
    rpc = "InvalidParams"


# --- tools ----------------------------------------------------------------------------------


class ToolError(AgentServerError):
    """A tool could not do what it was asked; the message goes back to the model."""

    code = "tool_error"


class PathOutsideWorkspaceError(ToolError):
    code = "path_outside_workspace"


class InvalidToolArgumentsError(ToolError):
    """The model called a tool with missing or ill-typed arguments; the message says which."""

    code = "invalid_tool_arguments"
