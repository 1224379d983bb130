"""Errors in the OpenAI APIs' shape: `{"error": {"message", "type", "param", "code"}}`."""

from __future__ import annotations

from typing import Any

from agent_server.llm.models import ModelInfo, ModelRegistry
from agent_server.sim.fields import FieldProblem, bracketed, json_type_name
from agent_server.sim.rejection import RequestRejected
from agent_server.sim.tool_schemas import openai_name_problem, openai_parameters_problem

_ARTICLE = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "list": "an array",
    "object": "an object",
}


def error_body(rejection: RequestRejected) -> dict[str, Any]:
    return {
        "error": {
            "message": rejection.message,
            "type": rejection.error_type,
            "param": rejection.param,
            "code": rejection.code,
        }
    }


def invalid(message: str, param: str | None = None, code: str | None = None) -> RequestRejected:
    return RequestRejected(400, message, "invalid_request_error", param=param, code=code)


def request_too_large(model_id: str, limit: int, requested: int) -> RequestRejected:
    """One request above the account's tokens-per-minute limit: OpenAI's 429, whose wording
    is quoted in many issue threads (e.g. Aider-AI/aider#1880). `requested` counts the prompt
    and the output budget, as OpenAI does."""
    return RequestRejected(
        429,
        f"Request too large for {model_id} in organization org-sim on tokens per min (TPM): "
        f"Limit {limit}, Requested {max(requested, limit + 1)}. The input or output tokens "
        "must be reduced in order to run successfully. Visit "
        "https://platform.openai.com/account/rate-limits to learn more.",
        "tokens",
        code="rate_limit_exceeded",
    )


def field_rejection(problem: FieldProblem) -> RequestRejected:
    where = bracketed(problem.path)
    if problem.kind == "missing":
        return invalid(f"Missing required parameter: '{where}'.", where,
                       "missing_required_parameter")
    return invalid(
        f"Invalid type for '{where}': expected {_ARTICLE[problem.expected]}, but got "
        f"{json_type_name(problem.got)} instead.",
        where,
        "invalid_type",
    )


def find_model(registry: ModelRegistry, model_id: str) -> ModelInfo:
    model = registry.get(model_id)
    if model is None:
        raise RequestRejected(
            404,
            f"The model `{model_id}` does not exist or you do not have access to it.",
            "invalid_request_error",
            code="model_not_found",
        )
    return model


def models_json(models: list[ModelInfo]) -> dict[str, Any]:
    return {"object": "list", "data": [model_json(model) for model in models]}


def model_json(model: ModelInfo) -> dict[str, Any]:
    owner = {"openai": "openai", "anthropic": "anthropic", "sim": "agent-server"}.get(
        model.vendor, "user"
    )
    return {"id": model.id, "object": "model", "created": 1735689600, "owned_by": owner}


REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")


def check_reasoning_effort(model: ModelInfo, effort: Any, param: str) -> None:
    """OpenAI's checks of a reasoning effort (`reasoning.effort` of Responses,
    `reasoning_effort` of Chat Completions): one of the documented values, and only for a
    reasoning model."""
    if effort is None:
        return
    if not model.reasoning:
        raise invalid(
            f"Unsupported parameter: '{param}' is not supported with this model.",
            param,
            "unsupported_parameter",
        )
    if effort not in REASONING_EFFORTS:
        listed = ", ".join(f"'{value}'" for value in REASONING_EFFORTS[:-1])
        raise invalid(
            f"Invalid value: '{effort}'. Supported values are: {listed}, and "
            f"'{REASONING_EFFORTS[-1]}'.",
            param,
            "invalid_value",
        )


def check_function(name: str, parameters: object, where: str) -> None:
    """Refuse a function tool as the OpenAI APIs do: its name (`where`.name), then its
    `parameters` when given (`where`.parameters)."""
    if (refused := openai_name_problem(name, f"{where}.name")) is not None:
        message, code = refused
        raise invalid(message, f"{where}.name", code)
    if parameters is not None and (problem := openai_parameters_problem(name, parameters)):
        raise invalid(problem, f"{where}.parameters", "invalid_function_parameters")
