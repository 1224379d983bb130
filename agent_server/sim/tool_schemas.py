"""The tool definitions the real APIs refuse, refused in their words.

Anthropic checks each custom tool's `input_schema` against JSON Schema draft 2020-12 and
refuses `oneOf`, `allOf` or `anyOf` at its top level; the OpenAI APIs check a function's
`parameters` against the same draft, and its name against `^[a-zA-Z0-9_-]+$` and 64
characters. One tool so refused fails the whole request (quoted in many issue threads:
anthropics/claude-code#7365 and #5973, openai function names in mcp-use/mcp-use#90).
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, best_match

_OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")
OPENAI_NAME_MAX = 64
_TOP_LEVEL_REFUSED = ("oneOf", "allOf", "anyOf")


def schema_problem(schema: Any) -> str | None:
    """Why `schema` is not a JSON Schema (draft 2020-12), or None. Every request sends its
    tools again: checked once per distinct schema (a check against the metaschema takes about
    a millisecond)."""
    try:
        text = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError):
        return "the schema is not JSON"
    return _text_problem(text)


@functools.lru_cache(maxsize=512)
def _text_problem(text: str) -> str | None:
    schema = json.loads(text)
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        found = best_match(Draft202012Validator(Draft202012Validator.META_SCHEMA)
                           .iter_errors(schema)) or error
        return str(found.message)
    return None


def anthropic_schema_problem(schema: Any) -> str | None:
    """The end of Anthropic's message about a custom tool's `input_schema`, or None."""
    if isinstance(schema, dict) and any(key in schema for key in _TOP_LEVEL_REFUSED):
        return "input_schema does not support oneOf, allOf, or anyOf at the top level"
    if schema_problem(schema) is not None:
        return (
            "JSON schema is invalid. It must match JSON Schema draft 2020-12 "
            "(https://json-schema.org/draft/2020-12). Learn more about tool use at "
            "https://docs.anthropic.com/en/docs/tool-use."
        )
    return None


def openai_name_problem(name: str, where: str) -> tuple[str, str] | None:
    """(message, code) of OpenAI's refusal of a function name at `where`, or None."""
    if not _OPENAI_NAME.match(name):
        return (
            f"Invalid '{where}': string does not match pattern. Expected a string that "
            "matches the pattern '^[a-zA-Z0-9_-]+$'.",
            "invalid_value",
        )
    if len(name) > OPENAI_NAME_MAX:
        return (
            f"Invalid '{where}': string too long. Expected a string with maximum length "
            f"{OPENAI_NAME_MAX}, but got a string with length {len(name)} instead.",
            "string_above_max_length",
        )
    return None


def openai_parameters_problem(name: str, parameters: Any) -> str | None:
    """OpenAI's message refusing a function's `parameters`, or None."""
    problem = schema_problem(parameters)
    return None if problem is None else f"Invalid schema for function '{name}': {problem}."
