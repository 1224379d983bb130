"""A request the simulated API refuses, as the real one would (status, error type, message)."""

from __future__ import annotations

from collections.abc import Mapping


class RequestRejected(Exception):
    """Raised while handling a request; the API module turns it into its own error body.

    `error_type` is the provider's error type (Anthropic `invalid_request_error`,
    `not_found_error`...; OpenAI `invalid_request_error`, `server_error`...); `param` and `code`
    are OpenAI's extra fields; `error_code` Anthropic's `error.details.error_code`, the stable
    name of a cause (the compaction errors have one).
    """

    def __init__(
        self,
        status: int,
        message: str,
        error_type: str = "invalid_request_error",
        *,
        param: str | None = None,
        code: str | None = None,
        headers: Mapping[str, str] | None = None,
        error_code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.error_type = error_type
        self.param = param
        self.code = code
        self.headers = dict(headers or {})
        self.error_code = error_code
