"""repo_map: the definitions that matter most in the workspace, ranked and fitted to a budget.

The same map as Aider's repository map (agent_server/repo_map: tree-sitter tags, PageRank over
the files and the names they share), given as a tool result the model asks for instead of a
head that changes every turn: appended, so the cached prefix holds. It is personalised by the
files this session has read or written (the ledger's, `ToolContext.session_files`, which a
compaction does not forget) and by what the call names in `focus` (names or paths). Unlike
Aider's, it keeps those files' own definitions in the map (after a compaction their text may
be gone from the context), puts the definitions of the names in `focus` first (Aider's
mention only weighs on names some file uses), and numbers each line so that a read can go
straight there.

Every file of the workspace is on the map (source files with their definitions, the others
by name when the budget leaves room, as Aider lists every file git tracks), except what find
and grep skip, files that may hold secrets, files with several hard links and symbolic links;
a file is read as the read tool reads it (`read_listed`), so one swapped for a link after
the listing is not read either.
"""

from __future__ import annotations

import asyncio
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent_server import repo_map
from agent_server.agent.tools.base import ToolContext, ToolKind, ToolResult, int_arg
from agent_server.agent.tools.output import bound_output
from agent_server.agent.tools.paths import (
    has_other_links,
    open_directory,
    open_regular,
    secret_file,
)
from agent_server.agent.tools.walk import walk_directory
from agent_server.context.estimate import estimate_text_tokens
from agent_server.errors import AgentServerError, InvalidToolArgumentsError, ToolError
from agent_server.llm.messages import ToolSpec

MIN_TOKENS = 256
MAX_TOKENS = 8192
MAX_FILES = 20_000  # a larger tree is mapped from its first files, and the map says so
MAX_FOCUS = 50
_WORD = re.compile(r"[A-Za-z_][\w.$/-]*")
_MAPS_KEPT = 4  # workspaces whose parsed files stay in memory

SPEC = ToolSpec(
    name="repo_map",
    description=(
        "A map of the workspace's code: the classes, functions and methods that matter most, "
        "with their signatures and line numbers, in their files and scopes. Definitions are "
        "ranked by how the files reference each other (PageRank, as Aider's repository map "
        "ranks them), favouring the files this session has read or edited and the names or "
        "paths given in focus. Use it to find where things are defined before listing "
        "directories or searching; then read the lines it shows."
    ),
    parameters={
        "type": "object",
        "properties": {
            "focus": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Names (functions, classes, modules) or file paths to favour",
            },
            "tokens": {
                "type": "integer",
                "description": (
                    f"The map's budget in tokens, {MIN_TOKENS} to {MAX_TOKENS} (default: the "
                    "session's setting, 1024 unless changed)"
                ),
            },
        },
        "required": [],
    },
)


class RepoMapTool:
    spec = SPEC
    read_only = True
    kind: ToolKind = "search"

    def paths(self, arguments: Mapping[str, Any]) -> tuple[str, ...]:
        return ()

    def title(self, arguments: Mapping[str, Any]) -> str:
        focus = arguments.get("focus") if isinstance(arguments, Mapping) else None
        words = [w for w in focus if isinstance(w, str)][:3] if isinstance(focus, list) else []
        return "Map the repository" + (f" around {', '.join(words)}" if words else "")

    async def run(self, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        if not repo_map.available():
            raise ToolError(
                "The repository map needs tree-sitter, its language pack and grep-ast: "
                f"{repo_map.INSTALL_HINT}. Use find and grep meanwhile."
            )
        default = min(max(ctx.repo_map_tokens, MIN_TOKENS), MAX_TOKENS)
        tokens = int_arg(arguments, "tokens", default)
        if not MIN_TOKENS <= tokens <= MAX_TOKENS:
            raise InvalidToolArgumentsError(
                f"'tokens' must be between {MIN_TOKENS} and {MAX_TOKENS}"
            )
        focus = _focus(arguments)
        return await asyncio.to_thread(_map, ctx, focus, tokens)


def _focus(arguments: Mapping[str, Any]) -> tuple[str, ...]:
    focus = arguments.get("focus")
    if focus is None:
        return ()
    if not isinstance(focus, list) or not all(isinstance(item, str) for item in focus):
        raise InvalidToolArgumentsError("'focus' must be a list of strings")
    return tuple(dict.fromkeys(word for item in focus for word in _WORD.findall(item)))[
        :MAX_FOCUS]


def _map(ctx: ToolContext, focus: tuple[str, ...], tokens: int) -> ToolResult:
    files, more = mapped_files(ctx.workspace)
    if not any(repo_map.is_source(path) for path in files):
        return ToolResult.of_text("There is no source file in the workspace to map.")
    known = set(files)
    session = sorted(path for path in ctx.session_files if path in known)
    mentioned_files = {path for path in focus if path in known}
    # A dotted name counts by its last part too (`sql.Statement`); a file name stays whole
    # (it steers the map to that file by its name).
    idents = set(focus) | {word.rsplit(".", 1)[-1] for word in focus
                           if "/" not in word and not repo_map.is_source(word)}
    text = _maps.get(ctx.workspace).render(
        session, [path for path in files if path not in session], tokens,
        mentioned_files, idents, hide_chat_files=False, line_numbers=True, strict=True,
        first=idents,
    )
    if not text:
        return ToolResult.of_text("No definitions found in the workspace's source files.")
    if more:
        text += (f"\n[Only the first {MAX_FILES} files were mapped: name a path in focus, or "
                 "use find and grep, for the rest.]\n")
    details = {"files": len(files), "sessionFiles": len(session), "focus": list(focus)}
    bounded = bound_output(text, spill_dir=ctx.spill_dir, tool_name="repo_map",
                           secrets=ctx.secrets)
    return ToolResult.of_text(bounded.text, details={**details, **bounded.details()})


def mapped_files(workspace: Path) -> tuple[list[str], bool]:
    """The workspace's files the map takes in (relative, POSIX), and whether there were more
    than it takes."""
    out: list[str] = []
    try:
        top = open_directory(Path(os.path.realpath(workspace)), str(workspace))
    except (OSError, AgentServerError):
        return out, False
    try:
        for entry in walk_directory(top):
            # A link (to a directory or not) is no regular file: left out, as a secret file.
            if not entry.is_file or secret_file(entry.relative):
                continue
            try:
                info = os.lstat(entry.relative, dir_fd=top)
            except OSError:
                continue
            if has_other_links(info):
                continue
            if len(out) == MAX_FILES:
                return out, True
            out.append(entry.relative)
    finally:
        os.close(top)
    return out, False


def read_listed(path: Path) -> bytes:
    """A listed file's bytes, read as the read tool reads (open_regular): a file swapped
    for a link (to a key outside the workspace) or given other hard links after it was
    listed is not read (OSError), and so never reaches the map sent to the provider."""
    try:
        with open_regular(path, str(path), hard_links_allowed=False) as handle:
            return handle.read()
    except AgentServerError as error:
        raise OSError(error.message) from error


class _Maps:
    """One RepoMap per workspace (the last few), so that a map asked for again parses only
    the files that changed."""

    def __init__(self) -> None:
        self._maps: OrderedDict[Path, repo_map.RepoMap] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, workspace: Path) -> repo_map.RepoMap:
        with self._lock:
            found = self._maps.pop(workspace, None) or repo_map.RepoMap(
                workspace, estimate_text_tokens, read_listed)
            self._maps[workspace] = found
            while len(self._maps) > _MAPS_KEPT:
                self._maps.popitem(last=False)
            return found


_maps = _Maps()
