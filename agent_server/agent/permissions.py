"""The permission gate: whether a tool call may run, asking the user when the mode says so.

Modes: `ask` asks before every tool call; `allowReads` (the default) runs read-only tools and
asks before write, edit and bash; `allowAll` asks nothing. The user's "always allow" and
"always reject" answers are remembered for the session, per tool name; a remembered
rejection holds in every mode (the user said no to that tool, and "allow all" is about not
asking, not about overriding an answer), a remembered allowance spares the question.
Options follow the Agent Client Protocol (allow_once, allow_always, reject_once,
reject_always). With no one to ask (headless), a call that needs asking is denied unless the
gate was built with `assume_yes` (the CLI's --yes).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Literal, TypeAlias, cast, get_args

from agent_server.agent.tools.base import Tool, ToolResult
from agent_server.errors import ConfigError
from agent_server.llm.messages import ToolCall

PermissionMode: TypeAlias = Literal["ask", "allowReads", "allowAll"]
PERMISSION_MODES: tuple[str, ...] = get_args(PermissionMode)
DEFAULT_MODE: PermissionMode = "allowReads"

PermissionOptionKind: TypeAlias = Literal[
    "allow_once", "allow_always", "reject_once", "reject_always"
]

# How a decision was reached (for logs, the editor, and the wording of a denial).
DecisionBasis: TypeAlias = Literal[
    "mode",  # the mode lets the call run without asking
    "remembered",  # an earlier "always" answer for this tool
    "user",  # the user answered just now
    "dismissed",  # the question was cancelled or dismissed, or asking failed
    "headless",  # nobody to ask: denied
    "assumeYes",  # nobody to ask, and the gate assumes yes
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PermissionOption:
    option_id: str
    name: str
    kind: PermissionOptionKind

    def to_json(self) -> dict[str, str]:
        return {"optionId": self.option_id, "name": self.name, "kind": self.kind}


_DEFAULT_OPTIONS: tuple[PermissionOption, ...] = (
    PermissionOption("allow_once", "Allow", "allow_once"),
    PermissionOption("allow_always", "Always allow this tool (this session)", "allow_always"),
    PermissionOption("reject_once", "Reject", "reject_once"),
    PermissionOption("reject_always", "Always reject this tool (this session)", "reject_always"),
)


def default_options() -> tuple[PermissionOption, ...]:
    """Allow once, allow always, reject once, reject always (ids equal to their kinds)."""
    return _DEFAULT_OPTIONS


@dataclass(frozen=True, slots=True)
class PermissionRequest:
    """One question to the user: may this tool call run?"""

    tool_call: ToolCall
    tool: Tool
    title: str  # one line, e.g. "Run: npm test", "Edit src/app.py"
    options: tuple[PermissionOption, ...]

    @property
    def tool_name(self) -> str:
        return self.tool.spec.name


# Returns the chosen option_id, or None when the question was cancelled or dismissed.
AskCallback: TypeAlias = Callable[[PermissionRequest], Awaitable[str | None]]


@dataclass(frozen=True, slots=True)
class PermissionDecision:
    """`remembered`: the decision comes from, or was just saved as, a session-wide rule for
    the tool (an "always" answer)."""

    allowed: bool
    reason: str
    remembered: bool = False
    basis: DecisionBasis = "mode"
    option_id: str | None = None


def parse_mode(value: str) -> PermissionMode:
    if value in PERMISSION_MODES:
        return cast(PermissionMode, value)
    raise ConfigError(
        f"Unknown permission mode {value!r}; use one of {', '.join(PERMISSION_MODES)}."
    )


class PermissionGate:
    """Decides tool calls for one session; owns the session's remembered answers."""

    def __init__(
        self,
        mode: PermissionMode = DEFAULT_MODE,
        ask: AskCallback | None = None,
        *,
        assume_yes: bool = False,
        options: tuple[PermissionOption, ...] | None = None,
    ) -> None:
        self._mode = parse_mode(mode)
        self._ask = ask
        self._assume_yes = assume_yes
        self._options = options if options is not None else default_options()
        self._remembered: dict[str, bool] = {}  # tool name -> allowed
        self._asking = asyncio.Lock()

    @property
    def mode(self) -> PermissionMode:
        return self._mode

    def set_ask(self, ask: AskCallback | None) -> None:
        """Who answers from now on (the editor that opened the session)."""
        self._ask = ask

    def set_mode(self, mode: PermissionMode) -> None:
        """Changes the mode (between turns); remembered answers are kept."""
        self._mode = parse_mode(mode)

    @property
    def remembered(self) -> Mapping[str, bool]:
        """Tool name -> allowed, for the "always" answers given in this session."""
        return dict(self._remembered)

    def forget(self, tool_name: str | None = None) -> None:
        """Drops the remembered answer for one tool, or all of them."""
        if tool_name is None:
            self._remembered.clear()
        else:
            self._remembered.pop(tool_name, None)

    def needs_asking(self, tool: Tool) -> bool:
        """Whether the mode alone (ignoring remembered answers) asks before `tool` runs."""
        if self._mode == "allowAll":
            return False
        if self._mode == "allowReads":
            return not tool.read_only
        return True

    async def decide(
        self, tool: Tool, call: ToolCall, *, warning: str | None = None
    ) -> PermissionDecision:
        """`warning`: something about this call the user must hear of (a file it names may
        also exist outside the workspace); such a call is asked about whatever the mode or
        an "always allow" answer, and the question says why."""
        name = tool.spec.name
        if self._remembered.get(name) is False:
            return PermissionDecision(
                False,
                f"the user chose to always reject {name} in this session",
                True,
                "remembered",
            )
        if warning is None and not self.needs_asking(tool):
            return PermissionDecision(True, f"the {self._mode} mode allows {name}", False, "mode")
        if warning is None and self._remembered.get(name):
            return PermissionDecision(
                True,
                f"the user chose to always allow {name} in this session",
                True,
                "remembered",
            )
        if self._ask is None:
            if self._assume_yes:
                return PermissionDecision(True, "assumed yes (--yes)", False, "assumeYes")
            return PermissionDecision(
                False, f"{name} needs permission and there is no one to ask", False, "headless"
            )
        # One question at a time: parallel calls to the same tool see an "always" answer
        # given to the first one instead of asking again.
        async with self._asking:
            remembered = self._remembered.get(name)
            if remembered is not None and (warning is None or not remembered):
                verb = "allow" if remembered else "reject"
                return PermissionDecision(
                    remembered,
                    f"the user chose to always {verb} {name} in this session",
                    True,
                    "remembered",
                )
            return await self._ask_user(tool, call, warning)

    async def _ask_user(
        self, tool: Tool, call: ToolCall, warning: str | None = None
    ) -> PermissionDecision:
        assert self._ask is not None
        name = tool.spec.name
        title = _title(tool, call) + (f" ({warning})" if warning else "")
        request = PermissionRequest(call, tool, title, self._options)
        try:
            chosen = await self._ask(request)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            logger.warning("asking permission for %s failed: %s", name, exc)
            return PermissionDecision(
                False, f"the permission request failed: {exc}", False, "dismissed"
            )
        if chosen is None:
            return PermissionDecision(
                False, "the permission request was cancelled", False, "dismissed"
            )
        option = next((o for o in self._options if o.option_id == chosen), None)
        if option is None:
            return PermissionDecision(
                False, f"unknown permission option {chosen!r}", False, "dismissed", chosen
            )
        if option.kind == "allow_always":
            self._remembered[name] = True
        elif option.kind == "reject_always":
            self._remembered[name] = False
        allowed = option.kind.startswith("allow")
        always = option.kind.endswith("always")
        verb = "allowed" if allowed else "rejected"
        reason = f"the user {verb} {name}" + (" for the rest of the session" if always else "")
        return PermissionDecision(allowed, reason, always, "user", option.option_id)


def _title(tool: Tool, call: ToolCall) -> str:
    try:
        return tool.title(call.arguments)
    except Exception:  # a title is a courtesy; never let it stop the question
        return tool.spec.name


def denied_result(decision: PermissionDecision) -> ToolResult:
    """The tool result the model gets for a call that was not allowed to run."""
    if decision.basis == "headless":
        text = (
            "This tool call needs the user's permission, and there is no one to ask in this "
            "non-interactive session, so it was not run. Do not retry it; finish what you can "
            "without it and tell the user what you would have run."
        )
    elif decision.basis == "dismissed":
        text = (
            "The permission request for this tool call was dismissed, so it was not run. "
            "Do not retry it; ask the user how to proceed."
        )
    elif decision.remembered:
        text = (
            "The user has chosen to reject every call of this tool in this session, so it was "
            "not run. Do not call this tool again; ask the user how to proceed."
        )
    else:
        text = (
            "The user denied permission to run this tool call. Do not retry it; ask the user "
            "how to proceed."
        )
    return ToolResult.error(text, details={"permission": "denied", "reason": decision.reason})
