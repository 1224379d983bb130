"""The permission gate: whether a tool call may run, asking the user when the mode says so.

Modes: `ask` asks before every tool call; `allowReads` (the default) runs read-only tools and
asks before write, edit and bash; `allowAll` asks nothing. The user's "always allow" and
"always reject" answers are remembered for the session as rules: "always allow" on a command
tool (bash) covers that exact command, or a prefix of it the user picks (`npm test:*`, which
only ever matches simple commands whose other words stay data in the workspace: see
shell_command.py; a command it does not cover is asked about, the question saying why),
never every command; on other tools
it covers the tool. "Always reject" covers the tool. A remembered rejection holds in every
mode (the user said no, and "allow all" is about not asking, not about overriding an answer);
a remembered allowance spares the question.
Where commands run in a sandbox the user may let out (`tools.sandbox: auto`), an approval
runs the command in it; the question also offers "Allow outside the sandbox" (once, or always
for that exact command), and a call whose `outsideSandbox` argument asks for it is asked
about in every mode, `allowAll` included, unless such an answer covers it.
Options follow the Agent Client Protocol (allow_once, allow_always, reject_once,
reject_always). With no one to ask (headless), a call that needs asking is denied unless the
gate was built with `assume_yes` (the CLI's --yes).
"""

from __future__ import annotations

import asyncio
import json
import logging
import shlex
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias, cast, get_args

from agent_server.agent.mcp.approval import NO_ANSWERS, McpFileAnswers
from agent_server.agent.settings import AgentSettings
from agent_server.agent.shell_command import (
    prefix_choices,
    prefix_label,
    starts_with,
    uncovered_by,
)
from agent_server.agent.tools.base import Tool, ToolResult
from agent_server.agent.tools.diff import FileChange
from agent_server.errors import ConfigError
from agent_server.llm.messages import ToolCall
from agent_server.protocol import PermissionMode as PermissionMode
from agent_server.protocol import PermissionOptionKind
from agent_server.whole_file import write_whole

PERMISSION_MODES: tuple[str, ...] = get_args(PermissionMode)
DEFAULT_MODE: PermissionMode = AgentSettings().permissions_mode


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


PREFIX_OPTION = "allow_prefix:"  # + the prefix's words, shell-quoted
OUTSIDE_OPTION = "allow_outside"  # once, outside the sandbox
ALWAYS_OUTSIDE_OPTION = "allow_always_outside"  # this exact command, always outside


@dataclass(frozen=True, slots=True)
class PermissionRule:
    """A remembered "always" answer for the rest of the session: every call of `tool`, or,
    for a command tool, exactly the command `command`, or the simple commands whose first
    words are `prefix`. `outside`: the command runs outside the sandbox (an exact command)."""

    tool: str
    allowed: bool
    command: str | None = None
    prefix: tuple[str, ...] | None = None
    outside: bool = False

    def matches(self, tool: str, command: str | None) -> bool:
        if tool != self.tool:
            return False
        if self.prefix is not None:
            return command is not None and starts_with(command, self.prefix)
        if self.command is not None:
            return command == self.command
        return True

    def describe(self) -> str:
        """What the rule covers, in the words of the option that made it."""
        outside = " outside the sandbox" if self.outside else ""
        if self.prefix is not None:
            return f"`{prefix_label(self.prefix)}`"
        if self.command is not None:
            return f"`{self.command}`{outside}"
        return f"every {self.tool} call"


def options_for(
    tool: Tool, call: ToolCall, escapable: bool = False
) -> tuple[PermissionOption, ...]:
    """The choices for one call. A command tool's "always allow" covers that command, or a
    prefix of it the user picks (`npm test:*`); never every command. Other tools' cover the
    tool. "Always reject" covers the tool. `escapable`: commands run in a sandbox the user
    may let this one out of, once or always (the exact command); a call that asks for it
    (`outsideSandbox`) gets those choices first."""
    name = tool.spec.name
    command = command_of(tool, call)
    reject = (
        PermissionOption("reject_once", "Reject", "reject_once"),
        PermissionOption("reject_always", f"Always reject {name} (this session)", "reject_always"),
    )
    if command is None:
        return (
            PermissionOption("allow_once", "Allow", "allow_once"),
            PermissionOption("allow_always", f"Always allow {name} (this session)", "allow_always"),
            *reject,
        )
    covers = f"`{command}`" if len(command) <= 60 and "\n" not in command else "this command"
    out = PermissionOption(OUTSIDE_OPTION, "Allow outside the sandbox", "allow_once")
    if escapable and asks_outside(tool, call):
        return (
            out,
            PermissionOption(
                ALWAYS_OUTSIDE_OPTION,
                f"Always allow {covers} outside the sandbox (this session)",
                "allow_always",
            ),
            PermissionOption("allow_once", "Allow in the sandbox", "allow_once"),
            *reject,
        )
    prefixes = [
        PermissionOption(
            PREFIX_OPTION + shlex.join(prefix),
            f"Always allow `{prefix_label(prefix)}` (this session)",
            "allow_always",
        )
        for prefix in reversed(prefix_choices(command))
    ]
    return (
        PermissionOption("allow_once", "Allow", "allow_once"),
        *((out,) if escapable else ()),
        PermissionOption("allow_always", f"Always allow {covers} (this session)", "allow_always"),
        *prefixes,
        *reject,
    )


def command_of(tool: Tool, call: ToolCall) -> str | None:
    """The command a command tool (kind `execute`) would run, or None for other tools."""
    command = call.arguments.get("command") if tool.kind == "execute" else None
    return command if isinstance(command, str) else None


def asks_outside(tool: Tool, call: ToolCall) -> bool:
    """Whether a command tool's call asks to run outside the sandbox (`outsideSandbox`)."""
    return tool.kind == "execute" and call.arguments.get("outsideSandbox") is True


@dataclass(frozen=True, slots=True)
class PermissionRequest:
    """One question to the user: may this tool call run?

    `title` is one line ("Run: npm test", "Edit src/app.py"); the whole of what would run is
    `command` (for a command tool) or `change` (the file change of write and edit, when it
    can be worked out before the call runs)."""

    tool_call: ToolCall
    tool: Tool
    title: str
    options: tuple[PermissionOption, ...]
    command: str | None = None
    change: FileChange | None = None

    @property
    def tool_name(self) -> str:
        return self.tool.spec.name


@dataclass(frozen=True, slots=True)
class PermissionAnswer:
    """An answer that says more than the option: `message`, what the user tells the agent
    to do instead (with a rejection); `new_text`, the file's content as the user reviewed
    and changed the proposed write or edit (with an allowance): that is what is written."""

    option_id: str
    message: str | None = None
    new_text: str | None = None


# Returns the chosen option_id (or an answer with more), or None when the question was
# cancelled or dismissed.
AskCallback: TypeAlias = Callable[[PermissionRequest], Awaitable[str | PermissionAnswer | None]]


@dataclass(frozen=True, slots=True)
class PermissionDecision:
    """`remembered`: the decision comes from, or was just saved as, a session-wide rule
    (an "always" answer)."""

    allowed: bool
    reason: str
    remembered: bool = False
    basis: DecisionBasis = "mode"
    option_id: str | None = None
    message: str | None = None  # what the user said to do instead (a rejection)
    new_text: str | None = None  # the change as the user revised it (an allowed edit)
    outside_sandbox: bool = False  # the user let this command out of the sandbox


def parse_mode(value: str) -> PermissionMode:
    if value in PERMISSION_MODES:
        return cast(PermissionMode, value)
    raise ConfigError(
        f"Unknown permission mode {value!r}; use one of {', '.join(PERMISSION_MODES)}."
    )


@dataclass(frozen=True, slots=True)
class PermissionChoices:
    """What the user chose for a session that only the open session holds, not its ledger:
    the permission mode it was switched to (None: the configured one), its "always"
    answers, and its answers about the workspace's `.mcp.json` ("Allow" and "Reject" for
    the session). A session the LSP server closes to bound what it holds open gets them
    back when it reopens (WorkspaceAgent.evict); the mode and the "always" answers are also
    saved beside its ledger when it is let go (`save_choices`), for the next process that
    opens it (an editor's window reloaded, an ACP `session/load`)."""

    mode: PermissionMode | None
    rules: tuple[PermissionRule, ...]
    mcp_files: McpFileAnswers = NO_ANSWERS


CHOICES_FILE = "choices.json"  # in the session's own folder, which no command can reach


def save_choices(folder: Path, choices: PermissionChoices, configured: PermissionMode) -> None:
    """The mode switched to and the "always" answers, in `folder` (the session's, under the
    user's sessions folder: the sandbox hides it and the file tools ask before writing
    there), for `load_choices`; `configured`, the mode the settings gave then. Nothing to
    keep: no file."""
    path = folder / CHOICES_FILE
    if choices.mode is None and not choices.rules:
        path.unlink(missing_ok=True)
        return
    data = {
        "configuredMode": configured,
        "mode": choices.mode,
        "rules": [
            {"tool": rule.tool, "allowed": rule.allowed, "command": rule.command,
             "prefix": list(rule.prefix) if rule.prefix is not None else None,
             "outside": rule.outside}
            for rule in choices.rules
        ],
    }
    folder.mkdir(parents=True, exist_ok=True)
    write_whole(path, json.dumps(data).encode())


def load_choices(folder: Path, configured: PermissionMode) -> PermissionChoices | None:
    """What `save_choices` kept in `folder`, or None (none, or unreadable: logged). The mode
    comes back only while the settings still give the mode they gave then: a mode switched
    to holds until the setting changes, as in an open session."""
    path = folder / CHOICES_FILE
    try:
        data = json.loads(path.read_bytes())
        mode = data["mode"]
        rules = tuple(
            PermissionRule(
                str(rule["tool"]), bool(rule["allowed"]),
                command=rule["command"] if isinstance(rule["command"], str) else None,
                prefix=tuple(str(w) for w in rule["prefix"]) if rule["prefix"] else None,
                outside=rule.get("outside") is True,
            )
            for rule in data["rules"]
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as error:
        logger.warning("ignored the session's saved permission choices (%s): %s", path, error)
        return None
    if mode not in PERMISSION_MODES or data.get("configuredMode") != configured:
        mode = None
    return PermissionChoices(cast(PermissionMode | None, mode), rules)


class PermissionGate:
    """Decides tool calls for one session; owns the session's remembered answers."""

    def __init__(
        self,
        mode: PermissionMode = DEFAULT_MODE,
        ask: AskCallback | None = None,
        *,
        assume_yes: bool = False,
    ) -> None:
        self._mode = parse_mode(mode)
        self._ask = ask
        self._assume_yes = assume_yes
        self._rules: list[PermissionRule] = []
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
    def rules(self) -> tuple[PermissionRule, ...]:
        """The "always" answers given in this session, oldest first."""
        return tuple(self._rules)

    def remember(self, rules: Sequence[PermissionRule]) -> None:
        """Takes back "always" answers given earlier (a session reopened in the same server:
        `PermissionChoices`)."""
        self._rules += [rule for rule in rules if rule not in self._rules]

    def forget(self, tool_name: str | None = None) -> None:
        """Drops the remembered answers for one tool, or all of them."""
        self._rules = [r for r in self._rules if tool_name is not None and r.tool != tool_name]

    def needs_asking(self, tool: Tool) -> bool:
        """Whether the mode alone (ignoring remembered answers) asks before `tool` runs. A
        tool that acts on the session alone (`session_only`: the plan, the pins, compact) never
        asks: it reads and changes nothing of the workspace or the machine."""
        if self._mode == "allowAll" or getattr(tool, "session_only", False):
            return False
        if self._mode == "allowReads":
            return not tool.read_only
        return True

    def _rule_for(self, tool: Tool, call: ToolCall, outside: bool) -> PermissionRule | None:
        """The rule that decides this call: a rejection wins over an allowance; a call asking
        to run outside the sandbox (`outside`) is allowed only by a rule that lets it out."""
        name, command = tool.spec.name, command_of(tool, call)
        matching = [rule for rule in self._rules if rule.matches(name, command)]
        allowing = [rule for rule in matching if rule.allowed and (rule.outside or not outside)]
        rejecting = (rule for rule in matching if not rule.allowed)
        return next(rejecting, None) or next(iter(allowing), None)

    def _uncovered(self, name: str, command: str | None) -> str | None:
        """Why an "always allow" prefix the user chose does not cover `command`, which
        starts with it (an option that runs another program, a path outside the
        workspace), for the question to say; None when there is no such prefix."""
        for rule in self._rules:
            if rule.allowed and rule.tool == name and rule.prefix and command is not None:
                why = uncovered_by(command, rule.prefix)
                if why is not None:
                    return f"not covered by `{prefix_label(rule.prefix)}`: {why}"
        return None

    async def decide(
        self,
        tool: Tool,
        call: ToolCall,
        change: FileChange | None = None,
        *,
        warning: str | None = None,
        escapable: bool = False,
    ) -> PermissionDecision:
        """`warning`: something about this call the user must hear of (a file it names may
        also exist outside the workspace); such a call is asked about whatever the mode or
        an "always allow" answer, and the question says why. `escapable`: commands run in a
        sandbox the user may let one out of (Confinement.escapable); a call asking to be let
        out is asked about in every mode, unless an "always ... outside" answer covers it.
        Nothing else lets a command out: not the mode, not --yes."""
        name = tool.spec.name
        outside = escapable and asks_outside(tool, call)
        rule = self._rule_for(tool, call, outside)
        if rule is not None and not rule.allowed:
            return _remembered(rule)
        if warning is None and rule is not None and rule.outside and escapable:
            return _remembered(rule)
        if warning is None and not outside and not self.needs_asking(tool):
            return PermissionDecision(True, f"the {self._mode} mode allows {name}", False, "mode")
        if warning is None and rule is not None:
            return _remembered(rule)
        if self._ask is None:
            if self._assume_yes:
                return PermissionDecision(True, "assumed yes (--yes)", False, "assumeYes")
            return PermissionDecision(
                False, f"{name} needs permission and there is no one to ask", False, "headless"
            )
        # One question at a time: parallel calls see an "always" answer given to the first
        # one instead of asking again.
        async with self._asking:
            rule = self._rule_for(tool, call, outside)
            if rule is not None and (warning is None or not rule.allowed):
                return _remembered(rule)
            return await self._ask_user(tool, call, change, warning, escapable)

    async def ask_about(
        self, tool: Tool, call: ToolCall, title: str, options: tuple[PermissionOption, ...]
    ) -> str | None:
        """A question that is not about a tool call of the model (the workspace's MCP
        servers, say), asked like one: the chosen option id, or None (dismissed, nobody to
        ask). With no one to ask, `assume_yes` answers the first "allow_once" option; the
        mode and remembered answers do not apply."""
        if self._ask is None:
            if self._assume_yes:
                return next((o.option_id for o in options if o.kind == "allow_once"), None)
            return None
        request = PermissionRequest(call, tool, title, options, command_of(tool, call))
        async with self._asking:
            try:
                answer = await self._ask(request)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                logger.warning("asking about %s failed: %s", title, exc)
                return None
        # Words or a revised change mean nothing here: the option is the answer.
        return answer.option_id if isinstance(answer, PermissionAnswer) else answer

    async def _ask_user(
        self,
        tool: Tool,
        call: ToolCall,
        change: FileChange | None,
        warning: str | None = None,
        escapable: bool = False,
    ) -> PermissionDecision:
        assert self._ask is not None
        name = tool.spec.name
        command = command_of(tool, call)
        options = options_for(tool, call, escapable)
        warning = warning or self._uncovered(name, command)
        title = _title(tool, call) + (f" ({warning})" if warning else "")
        request = PermissionRequest(call, tool, title, options, command, change)
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
        answer = chosen if isinstance(chosen, PermissionAnswer) else PermissionAnswer(chosen)
        chosen = answer.option_id
        option = next((o for o in options if o.option_id == chosen), None)
        if option is None:
            return PermissionDecision(
                False, f"unknown permission option {chosen!r}", False, "dismissed", chosen
            )
        allowed = option.kind.startswith("allow")
        # Words for the agent go with a rejection; a revised change with an allowance of a
        # change the question showed.
        message = (answer.message or "").strip() or None if not allowed else None
        new_text = answer.new_text if allowed and change is not None else None
        outside = chosen in (OUTSIDE_OPTION, ALWAYS_OUTSIDE_OPTION)
        if not option.kind.endswith("always"):
            verb = "allowed" if allowed else "rejected"
            where = " outside the sandbox" if outside else ""
            return PermissionDecision(
                allowed, f"the user {verb} {name}{where}", False, "user", chosen, message,
                new_text, outside,
            )
        rule = PermissionRule(name, allowed)
        if allowed and command is not None:
            if chosen.startswith(PREFIX_OPTION):
                rule = PermissionRule(
                    name, True, prefix=tuple(shlex.split(chosen[len(PREFIX_OPTION) :]))
                )
            else:
                rule = PermissionRule(name, True, command=command, outside=outside)
        self._rules.append(rule)
        verb = "allow" if allowed else "reject"
        reason = f"the user chose to always {verb} {rule.describe()} in this session"
        return PermissionDecision(
            allowed, reason, True, "user", chosen, message, new_text, outside
        )


def _remembered(rule: PermissionRule) -> PermissionDecision:
    verb = "allow" if rule.allowed else "reject"
    return PermissionDecision(
        rule.allowed,
        f"the user chose to always {verb} {rule.describe()} in this session",
        True,
        "remembered",
        outside_sandbox=rule.allowed and rule.outside,
    )


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
            "without it and tell the user what you would have run, and that they can allow "
            "such calls by running again with --yes, or with the permissions.mode setting "
            "set to allowAll."
        )
    elif decision.basis == "dismissed":
        text = (
            "The permission request for this tool call was dismissed, so it was not run. "
            "Do not retry it; ask the user how to proceed."
        )
    elif decision.message is not None:
        text = (
            "The user rejected this tool call, so it was not run, and said what to do "
            f"instead:\n\n{decision.message}\n\nDo that; do not retry the call as it was."
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
    details = {"permission": "denied", "reason": decision.reason}
    if decision.message is not None:
        details["message"] = decision.message
    return ToolResult.error(text, details=details)
