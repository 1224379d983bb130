"""The workspace's `.mcp.json` runs commands: its servers start only once the user approved
that file's exact content.

A repository can ship a `.mcp.json`, and anything that writes the workspace (a command the
user allowed, an `npm install` script, a `git pull`) can change it; what it names would run
with the server's rights, outside any sandbox. So the servers it lists are held (shown as
not started, with the reason) until the user approves the file's content, identified by its
SHA-256: asked at the session's next turn, through the same question as a tool call
(`agent/requestPermission` in the editor, `session/request_permission` over ACP, a prompt in
the terminal), which shows the file as it is. "Always" remembers the digest for this
workspace (in the user's config directory: `approvals_path`); "Allow" starts them for this
session only; "Reject" leaves them off for the session. When the file changes, its servers
are held again and the user is asked again ("changed since you approved it"). Servers from
the user's own file, the settings or the editor's session (ACP) are not held: the user
wrote those.

Where "Always" is kept decides who can approve: only a place neither the workspace, nor a
command, nor a tool the model calls can write. Not the sessions directory: `sessionsDir` can
be set by the workspace's own settings, inside the workspace, and a repository that shipped
`approved-mcp.json` with its `.mcp.json`'s digest had its servers started unasked. So the
approvals live in agent-server's directory of the user's config (beside the user's
`mcp.json`), which the sandbox hides and the file tools ask before changing; a file of
approvals found inside the workspace (a config directory there, a home opened as the
workspace) is never read, and nothing is remembered there. The old place, the default
sessions directory, is still read (outside the workspace only); an `approved-mcp.json` in
another sessions directory is not, and the log says so once.

Claude Code asks the same way before it starts a project's `.mcp.json` servers.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from agent_server.agent.mcp.config import WORKSPACE_FILE, McpServerConfig
from agent_server.agent.tools.base import ToolContext, ToolKind, ToolResult
from agent_server.llm.messages import ToolCall, ToolSpec
from agent_server.whole_file import write_whole

log = logging.getLogger(__name__)

SHOWN_CHARS = 20_000  # of the file, in the question; past it, the servers' command lines
APPROVALS_FILE = "approved-mcp.json"
_TOLD: set[Path] = set()  # the files of approvals not read, said once in the log


def approvals_path() -> Path:
    """Where the user's "Always" answers are kept: agent-server's config directory of the
    user, never a workspace's (see the module docstring)."""
    return Path(platformdirs.user_config_dir("agent-server")) / APPROVALS_FILE


def content_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def held_reason(declined: bool) -> str:
    if declined:
        return f"not started: you did not approve the workspace's {WORKSPACE_FILE} (this session)"
    return (
        f"not started: waiting for your approval of the workspace's {WORKSPACE_FILE} (asked at "
        "your next prompt)"
    )


class ApprovedFiles:
    """The digests of the `.mcp.json` contents the user approved for good, per workspace, in
    a JSON file (`{workspace: {".mcp.json": digest}}`), written atomically. `earlier`: files
    of approvals from before (the default sessions directory's), read when `path` has none
    for the workspace. None is read, or written, inside the workspace."""

    def __init__(self, path: Path, workspace: Path, earlier: Sequence[Path] = ()) -> None:
        self.path = path
        self.workspace = str(workspace)
        self.earlier = tuple(earlier)

    def _outside_workspace(self, path: Path) -> bool:
        try:
            inside = path.resolve().is_relative_to(Path(self.workspace).resolve())
        except (OSError, RuntimeError):
            inside = True  # a loop of links: not trusted
        if inside and path.exists():
            ignored(path, "it is inside the workspace, where a repository or a command could "
                    "have written it")
        return not inside

    def _all(self, path: Path) -> dict[str, Any]:
        if not self._outside_workspace(path):
            return {}
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def approved(self) -> str | None:
        """The digest approved for good, if any."""
        for path in (self.path, *self.earlier):
            entry = self._all(path).get(self.workspace)
            digest = entry.get(WORKSPACE_FILE) if isinstance(entry, Mapping) else None
            if isinstance(digest, str):
                return digest
        return None

    def remember(self, digest: str) -> None:
        if not self._outside_workspace(self.path):
            log.warning(
                "the approval of %s is not remembered: %s is inside the workspace (approved "
                "for this session only)", WORKSPACE_FILE, self.path,
            )
            return
        data = self._all(self.path)
        entry = data.get(self.workspace)
        kept = entry if isinstance(entry, dict) else {}
        data[self.workspace] = {**kept, WORKSPACE_FILE: digest}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_whole(self.path, json.dumps(data, indent=2, sort_keys=True).encode())
        except OSError as error:
            log.warning("could not save the approval of %s: %s", WORKSPACE_FILE, error)


def ignored(path: Path, why: str) -> None:
    """Says once in the log that a file of approvals is not read, and why."""
    if path in _TOLD:
        return
    _TOLD.add(path)
    log.warning(
        "%s ignored: the approvals of %s are not read from it (%s); they are kept in %s",
        path, WORKSPACE_FILE, why, approvals_path(),
    )


def workspace_approvals(workspace: Path, sessions_root: Path, default_root: Path) -> (
    ApprovedFiles
):
    """The approvals of `workspace`'s `.mcp.json`: the user's file, and the one the default
    sessions directory (`default_root`) held before. A `sessions_root` set elsewhere (by the
    `sessionsDir` setting, which a workspace can set) is never read: its file is ignored,
    and said in the log."""
    root = sessions_root.expanduser().resolve()
    if root != default_root.expanduser().resolve() and (root / APPROVALS_FILE).exists():
        ignored(root / APPROVALS_FILE, (
            "it is inside the workspace, where a repository or a command could have written it"
            if root.is_relative_to(workspace.resolve())
            else "it is in the folder sessionsDir names, which a workspace's settings can set"
        ))
    return ApprovedFiles(approvals_path(), workspace, earlier=(default_root / APPROVALS_FILE,))


@dataclass(frozen=True, slots=True)
class McpFileAnswers:
    """What the user answered in one session about `.mcp.json` contents, by digest: "Allow"
    (`approved`) and "Reject" (`declined`); "Always" is kept in `ApprovedFiles`. Only the
    open session holds them: one closed to bound what a server holds open gets them back
    when it reopens (`PermissionChoices`). Another content of the file is another digest,
    asked about again."""

    approved: frozenset[str] = frozenset()
    declined: frozenset[str] = frozenset()

    def approve(self, digest: str) -> McpFileAnswers:
        return McpFileAnswers(self.approved | {digest}, self.declined - {digest})

    def decline(self, digest: str) -> McpFileAnswers:
        return McpFileAnswers(self.approved, self.declined | {digest})


NO_ANSWERS = McpFileAnswers()  # a session's, until the user answers


@dataclass(frozen=True, slots=True)
class PendingApproval:
    """A `.mcp.json` content whose servers wait for the user."""

    path: Path
    digest: str
    servers: tuple[McpServerConfig, ...]
    changed: bool  # another content of the file had been approved before

    def call(self) -> ToolCall:
        try:
            data = self.path.read_bytes()
        except OSError:
            data = b""
        text = data.decode("utf-8", errors="replace")
        if content_digest(data) != self.digest or len(text) > SHOWN_CHARS:
            # Changed again since it was read, or too long to show: the command lines.
            text = "\n".join(f"{c.name}: {c.display}" for c in self.servers)
        return ToolCall(
            f"mcp-approval-{self.digest[:12]}",
            APPROVAL.spec.name,
            {"command": text, "path": str(self.path), "sha256": self.digest},
        )

    def title(self) -> str:
        names = ", ".join(c.name for c in self.servers)
        changed = " (it changed since you approved it)" if self.changed else ""
        return f"Start the MCP servers of {WORKSPACE_FILE}: {names}{changed}"


def pending_approval(
    held: Sequence[McpServerConfig], approved_before: str | None
) -> PendingApproval | None:
    """The approval the held servers wait for (the first file's, by digest)."""
    if not held or held[0].digest is None:
        return None
    digest = held[0].digest
    servers = tuple(c for c in held if c.digest == digest)
    path = Path(servers[0].source)
    return PendingApproval(path, digest, servers, approved_before not in (None, digest))


class _ApprovalQuestion:
    """The "tool" a permission question about `.mcp.json` is asked for (never run)."""

    spec = ToolSpec(
        "mcp_servers", "Start the MCP servers the workspace's .mcp.json lists.", {"type": "object"}
    )
    read_only = False
    kind: ToolKind = "execute"

    async def run(self, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        return ToolResult.error("not a tool the model can call")

    def paths(self, arguments: Mapping[str, Any]) -> tuple[str, ...]:
        return (WORKSPACE_FILE,)

    def title(self, arguments: Mapping[str, Any]) -> str:
        return f"Start the MCP servers of {WORKSPACE_FILE}"


APPROVAL = _ApprovalQuestion()
