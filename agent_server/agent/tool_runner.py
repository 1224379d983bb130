"""Running the tool calls of one assistant message.

Calls are checked by the permission gate one at a time, in order (a person answers them);
consecutive read-only calls then run in parallel, anything that writes runs alone. Results
come back in the order of the calls, whatever order they finish in, so the ledger and the
next request do not depend on timing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent_server.agent.checkpoints import DETAILS_KEY, BlobStore, Captured, capture, version_after
from agent_server.agent.events import EventSink, Notice, ToolCallStarted, ToolCallUpdated
from agent_server.agent.permissions import PermissionGate, denied_result
from agent_server.agent.tools import Tool, ToolContext, ToolResult, run_tool, unknown_tool_result
from agent_server.agent.tools.diff import FileChange, unified_diff
from agent_server.agent.tools.paths import file_warnings, hard_linked
from agent_server.agent.tools.protected_paths import protected_warnings
from agent_server.agent.transcript import describe_call, json_details
from agent_server.errors import redact
from agent_server.llm.messages import ImageContent, TextContent, ToolCall, ToolResultMessage

# What a call stopped by the user's cancel says: to the model (its result in the ledger) and
# to the user (the card of every front end, live and reloaded).
ABORTED_BY_USER = "The tool call was aborted by the user."


def aborted_result(call: ToolCall, why: str = ABORTED_BY_USER) -> ToolResultMessage:
    """The result of a call that did not run, or did not finish (`aborted` tells an editor
    it was stopped, not failed)."""
    return ToolResultMessage(
        call.id, call.name, (TextContent(why),), is_error=True, details={"aborted": True}
    )


class ToolRunner:
    def __init__(
        self,
        tools: Callable[[], Sequence[Tool]],
        gate: PermissionGate,
        make_context: Callable[[Callable[[str], None] | None], ToolContext],
        emit: EventSink,
        *,
        checkpoints: BlobStore | None = None,
        private: Sequence[Path] = (),
    ) -> None:
        """`private`: agent-server's own folders (protected_warnings)."""
        self._private = tuple(private)
        self._current = tools  # the list in force can change between calls (accepted MCP tools)
        self._gate = gate
        self._make_context = make_context
        self._emit = emit
        self._checkpoints = checkpoints
        self._told_unconfined = False
        self._confirmed: set[str] = set()  # calls the user allowed despite a warning
        self._let_out: set[str] = set()  # commands the user let out of the sandbox
        # Changes the user revised before allowing them (by call id): what was shown, and
        # the content to write instead.
        self._revised: dict[str, tuple[FileChange, str]] = {}

    @property
    def _tools(self) -> dict[str, Tool]:
        return {tool.spec.name: tool for tool in self._current()}

    def tool(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def announce(self, turn_id: str, calls: Sequence[ToolCall]) -> None:
        tools = self._tools
        for call in calls:
            title, kind, paths = describe_call(call, tools.get(call.name))
            self._emit(ToolCallStarted(turn_id, call, title, kind, paths))

    async def run(
        self, turn_id: str, calls: Sequence[ToolCall], results: dict[str, ToolResultMessage]
    ) -> None:
        """Run every call; `results` fills in as calls finish (so a cancelled caller knows
        which calls have their result)."""
        batch: list[ToolCall] = []
        tools = self._tools
        for call in calls:
            tool = tools.get(call.name)
            if tool is None:
                results[call.id] = self._finish(
                    turn_id, call, unknown_tool_result(call.name, tuple(tools.values()))
                )
                continue
            paths = tool.paths(call.arguments)
            context = self._make_context(None)
            workspace = context.workspace
            # Asked about in every mode: a file that may also be outside (hard links), and,
            # for the file tools, a file that may hold secrets, and one that programs outside
            # the sandbox act on (what the sandbox keeps commands from writing).
            found = file_warnings(workspace, paths) if tool.kind in ("read", "edit") else (
                hard_linked(workspace, paths)
            )
            if tool.kind == "edit":
                found += protected_warnings(workspace, paths, self._private)
            warning = "; ".join(found) or None
            preview, scrubbed = await self._preview(tool, call)
            decision = await self._gate.decide(
                tool, call, preview, warning=warning, escapable=context.confinement.escapable
            )
            if not decision.allowed:
                results[call.id] = self._finish(turn_id, call, denied_result(decision))
                continue
            if decision.new_text is not None and preview is not None:
                if scrubbed:
                    # The question showed the change with its secrets scrubbed: writing the
                    # user's copy would write the placeholders.
                    self._emit(
                        Notice(
                            turn_id,
                            "warning",
                            f"The change to {preview.path} holds a secret, so it is applied as "
                            "the agent proposed it; edit the file itself to change it.",
                        )
                    )
                elif decision.new_text != preview.new_text:
                    self._revised[call.id] = (preview, decision.new_text)
            if warning is not None:
                self._confirmed.add(call.id)
            if decision.outside_sandbox:
                self._let_out.add(call.id)
            if tool.read_only:
                batch.append(call)
                continue
            await self._run_batch(turn_id, batch, results)
            batch = []
            await self._run_batch(turn_id, [call], results)
        await self._run_batch(turn_id, batch, results)

    async def _run_batch(
        self, turn_id: str, calls: Sequence[ToolCall], results: dict[str, ToolResultMessage]
    ) -> None:
        if not calls:
            return

        tools = self._tools

        async def one(call: ToolCall) -> None:
            tool = tools[call.name]
            self._emit(ToolCallUpdated(turn_id, call.id, "in_progress"))

            def on_output(fragment: str) -> None:
                self._emit(ToolCallUpdated(turn_id, call.id, "in_progress", output=fragment))

            context = self._make_context(on_output if call.name == "bash" else None)
            context = replace(context, call_id=call.id)
            if call.id in self._confirmed:
                context = replace(context, hard_links_allowed=True)
            if call.id in self._let_out:
                self._let_out.discard(call.id)
                context = replace(context, confinement=context.confinement.outside())
            confined = context.confinement
            if call.name == "bash" and confined.reason and not self._told_unconfined:
                # The settings ask for a sandbox this machine cannot give: say so, once.
                self._told_unconfined = True
                verb = "are refused (tools.sandbox is always)" if confined.strict else (
                    "run without a sandbox"
                )
                self._emit(Notice(turn_id, "warning", f"Commands {verb}: {confined.reason}."))
            captured = await self._capture(tool, call, context)
            revised = self._revised.pop(call.id, None)
            if revised is None:
                result = await run_tool(tool, call.arguments, context)
            else:
                result = await self._write_revised(revised, context)
            if captured is not None and not result.is_error and self._checkpoints is not None:
                # The file's content before and after, for a rewind that restores files.
                version = await asyncio.to_thread(version_after, captured, self._checkpoints)
                details = {**(result.details or {}), DETAILS_KEY: version.to_json()}
                result = replace(result, details=details)
            results[call.id] = self._finish(turn_id, call, result)

        await asyncio.gather(*(one(call) for call in calls))

    async def _write_revised(
        self, revised: tuple[FileChange, str], context: ToolContext
    ) -> ToolResult:
        """The user's revision of a proposed change, written instead of it; the model is told
        how it differs from what it proposed."""
        proposed, text = revised
        writer = self._tools.get("write")
        if writer is None:
            return ToolResult.error("The user's revision could not be written (no write tool).")
        result = await run_tool(writer, {"path": proposed.path, "content": text}, context)
        if result.is_error:
            return result
        told = (
            "The user reviewed your change and revised it before it was applied: the file now "
            "differs from what you proposed as follows (your proposal -> what was written).\n"
            + unified_diff(proposed.new_text, text, proposed.path)
        )
        return replace(
            result,
            content=(*result.content, TextContent(told)),
            details={**(result.details or {}), "revised": True},
        )

    async def _capture(self, tool: Tool, call: ToolCall, context: ToolContext) -> Captured | None:
        """Before a tool that changes a file (write, edit) runs: that file's content, kept."""
        if self._checkpoints is None or tool.read_only or tool.kind != "edit":
            return None
        paths = tool.paths(call.arguments)
        if not paths:
            return None
        return await asyncio.to_thread(capture, context.workspace, self._checkpoints, paths[0])

    async def _preview(self, tool: Tool, call: ToolCall) -> tuple[FileChange | None, bool]:
        """The file change a write or edit would make, secrets scrubbed, for the question;
        and whether anything was scrubbed."""
        preview = getattr(tool, "preview", None)
        if not callable(preview):
            return None, False
        context = self._make_context(None)
        change = await preview(call.arguments, context)
        if not isinstance(change, FileChange):
            return None, False
        scrub = context.secrets
        shown = FileChange(
            change.path,
            None if change.old_text is None else redact(change.old_text, *scrub),
            redact(change.new_text, *scrub),
        )
        return shown, shown != change

    def _finish(self, turn_id: str, call: ToolCall, result: ToolResult) -> ToolResultMessage:
        details: Mapping[str, Any] | None = result.details
        message = ToolResultMessage(
            call.id,
            call.name,
            result.content,
            is_error=result.is_error,
            details=json_details(details) if details else None,
        )
        self._emit(
            ToolCallUpdated(
                turn_id,
                call.id,
                "failed" if result.is_error else "completed",
                output=message.text,
                details=details,
                images=tuple(b for b in result.content if isinstance(b, ImageContent)),
            )
        )
        return message
