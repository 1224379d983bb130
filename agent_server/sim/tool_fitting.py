"""A scenario's tool call, fitted to the tools the request declares.

A scenario step names a capability and its arguments in the simulator's own vocabulary
(`ls {path}`, `read {path, offset?, limit?}`, `grep {pattern, path?, glob?}`,
`find {pattern, path?}`, `write {path, content}`, `edit {path, oldText, newText}`,
`bash {command}`, `repo_map {focus?}`; `list`, `search` and `shell` are accepted as names
too). A real client
declares its own tools: Claude Code's `Read {file_path}` wants an absolute path, pi's `edit`
takes a list of `edits`, Codex offers only `exec_command {cmd}`. `fit_call` picks the declared
tool for the capability and fills that tool's own schema:

1. a declared tool with the scenario's exact name gets the arguments as written, when they
   hold every property its schema requires;
2. otherwise a declared tool whose name is one of the capability's usual names (any case)
   gets the arguments renamed to its own properties (`file_path`, `old_string`, `cmd`, ...),
   paths made absolute when the property asks for an absolute path, an edit given as a list of
   edits or as a patch when that is what the tool takes;
3. otherwise, when a shell tool is declared, the equivalent shell command;
4. otherwise nothing: the call is left out.

The working directory (for absolute paths) is read from what clients tell the model: Claude
Code's "Primary working directory: ...", Codex's `<cwd>...</cwd>`, pi's "Current working
directory: ...".
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from typing import Any

from agent_server.sim.transcript import ToolSpec, Transcript

CAPABILITIES: Mapping[str, str] = {
    "ls": "list", "list": "list",
    "read": "read",
    "grep": "search", "search": "search",
    "find": "find", "glob": "find",
    "write": "write",
    "edit": "edit",
    "bash": "shell", "shell": "shell",
    "repo_map": "map",
}
# Lower-cased tool names that offer each capability, in order of preference.
_TOOL_NAMES: Mapping[str, tuple[str, ...]] = {
    "list": ("ls", "list", "list_dir", "list_directory", "list_files"),
    "read": ("read", "read_file", "view", "view_file", "cat"),
    "search": ("grep", "search", "search_files", "grep_search", "rg", "ripgrep"),
    "find": ("find", "glob", "find_files", "file_search"),
    "write": ("write", "write_file", "create_file"),
    "edit": ("edit", "edit_file", "str_replace", "str_replace_editor", "multiedit",
             "apply_patch"),
    "shell": ("bash", "shell", "exec_command", "run_command", "run_shell_command",
              "execute_command", "terminal", "local_shell"),
    # A map of the repository's definitions (Aider's repository map as a tool).
    "map": ("repo_map", "repomap", "repository_map", "get_repo_map", "code_map"),
}
# The simulator's argument names -> the property names tools use for them.
_SYNONYMS: Mapping[str, tuple[str, ...]] = {
    "path": ("path", "file_path", "filepath", "file", "filename", "target_file",
             "absolute_path", "dir_path", "directory", "dir", "target_directory"),
    "pattern": ("pattern", "regex", "query", "glob_pattern"),
    "glob": ("glob", "include", "file_glob", "file_pattern"),
    "offset": ("offset", "start_line", "line_offset", "from_line"),
    "limit": ("limit", "max_lines", "line_count"),
    "content": ("content", "contents", "file_text", "text", "data"),
    "oldText": ("old_string", "oldtext", "old_str", "old_text", "search"),
    "newText": ("new_string", "newtext", "new_str", "new_text", "replacement", "replace"),
    "command": ("command", "cmd", "script", "commands"),
    "focus": ("focus", "symbols", "identifiers", "names", "mentions"),
}
_CWD_PATTERNS = (
    re.compile(r"<cwd>\s*([^<\n]+?)\s*</cwd>"),
    re.compile(r"(?:Primary )?[Ww]orking directory:\s*(\S+)"),
    re.compile(r"Current working directory:\s*(\S+)"),
)


def working_directory(transcript: Transcript) -> str | None:
    """The workspace path the client told the model about, if it did."""
    texts = [transcript.system]
    for message in transcript.messages[:3]:
        texts.extend(message.texts)
    for text in texts:
        for pattern in _CWD_PATTERNS:
            match = pattern.search(text)
            if match and match.group(1).startswith("/"):
                return match.group(1).rstrip("/.,;")
    return None


def fit_call(
    name: str, arguments: Mapping[str, Any], tools: tuple[ToolSpec, ...], cwd: str | None
) -> tuple[str, dict[str, Any]] | None:
    """(declared tool name, its arguments) for the scenario's call, or None if none fits."""
    exact = next((tool for tool in tools if tool.name == name), None)
    if exact is not None and _has_required(exact, arguments):
        return name, dict(arguments)
    capability = CAPABILITIES.get(name)
    if capability is None:
        return (name, dict(arguments)) if exact is not None else None
    fitting = exact or _tool_for(capability, tools)
    if fitting is not None:
        return fitting.name, _fill(capability, arguments, fitting, cwd)
    shell = _tool_for("shell", tools)
    if shell is None or capability in ("shell", "map"):  # no command draws a map
        return None
    command = shell_command(capability, arguments)
    return shell.name, _fill("shell", {"command": command}, shell, cwd)


def _has_required(tool: ToolSpec, arguments: Mapping[str, Any]) -> bool:
    required = tool.schema.get("required")
    return not isinstance(required, list) or all(key in arguments for key in required)


def declared_tool(capability: str, tools: tuple[ToolSpec, ...]) -> ToolSpec | None:
    """The declared tool that offers `capability` under one of its usual names, if any."""
    return _tool_for(capability, tools)


def _tool_for(capability: str, tools: tuple[ToolSpec, ...]) -> ToolSpec | None:
    by_name = {tool.name.lower(): tool for tool in tools}
    for candidate in _TOOL_NAMES[capability]:
        if candidate in by_name:
            return by_name[candidate]
    return None


def _properties(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    properties = schema.get("properties")
    return properties if isinstance(properties, Mapping) else {}


def _property_for(key: str, properties: Mapping[str, Any]) -> str | None:
    lowered = {name.lower(): name for name in properties}
    for synonym in _SYNONYMS.get(key, (key,)):
        if synonym.lower() in lowered:
            return lowered[synonym.lower()]
    return None


def _wants_absolute(spec: Any) -> bool:
    description = str(spec.get("description", "")) if isinstance(spec, Mapping) else ""
    lowered = description.lower()
    either = "relative or absolute" in lowered or "absolute or relative" in lowered
    return "absolute" in lowered and not either


def _absolute(path: str, cwd: str | None) -> str:
    if cwd is None or path.startswith("/"):
        return path
    if path in (".", "./", ""):
        return cwd
    return f"{cwd}/{path.removeprefix('./')}"


def _fill(
    capability: str, arguments: Mapping[str, Any], tool: ToolSpec, cwd: str | None
) -> dict[str, Any]:
    properties = _properties(tool.schema)
    if not properties:
        return dict(arguments)
    if capability == "edit" and tool.name.lower() == "apply_patch":
        patch_key = next(iter(properties))
        return {patch_key: edit_patch(arguments)}
    out: dict[str, Any] = {}
    for key, value in arguments.items():
        if capability == "edit" and key in ("oldText", "newText"):
            continue
        target = _property_for(key, properties)
        if target is None:
            continue
        spec = properties[target]
        if key == "path" and isinstance(value, str) and _wants_absolute(spec):
            value = _absolute(value, cwd)
        if key == "command" and isinstance(spec, Mapping) and spec.get("type") == "array":
            value = ["bash", "-lc", value]
        if key == "pattern" and capability == "find" and tool.name.lower() == "glob" \
                and isinstance(value, str) and "/" not in value:
            value = f"**/{value}"
        out[target] = value
    if capability == "edit":
        out.update(_edit_arguments(arguments, properties))
    if capability == "search":
        mode = properties.get("output_mode")
        if isinstance(mode, Mapping) and "content" in (mode.get("enum") or ()):
            out["output_mode"] = "content"
        if "-n" in properties:
            out["-n"] = True
    return out


def _edit_arguments(arguments: Mapping[str, Any], properties: Mapping[str, Any]) -> dict[str, Any]:
    old, new = arguments.get("oldText", ""), arguments.get("newText", "")
    old_key, new_key = _property_for("oldText", properties), _property_for("newText", properties)
    if old_key and new_key:
        return {old_key: old, new_key: new}
    edits = properties.get("edits")
    if isinstance(edits, Mapping):
        items = edits.get("items")
        item_properties = _properties(items) if isinstance(items, Mapping) else {}
        item_old = _property_for("oldText", item_properties) or "oldText"
        item_new = _property_for("newText", item_properties) or "newText"
        return {"edits": [{item_old: old, item_new: new}]}
    return {}


def edit_patch(arguments: Mapping[str, Any]) -> str:
    """An edit in the `*** Begin Patch` format (apply_patch)."""
    path = str(arguments.get("path", ""))
    old = str(arguments.get("oldText", "")).splitlines()
    new = str(arguments.get("newText", "")).splitlines()
    body = [f"-{line}" for line in old] + [f"+{line}" for line in new]
    return "\n".join(["*** Begin Patch", f"*** Update File: {path}", "@@", *body,
                      "*** End Patch"])


def shell_command(capability: str, arguments: Mapping[str, Any]) -> str:
    """The shell command that does what the capability's call would do."""
    quote = shlex.quote
    path = str(arguments.get("path") or ".")
    if capability == "list":
        return f"ls -la {quote(path)}"
    if capability == "read":
        offset, limit = arguments.get("offset"), arguments.get("limit")
        if offset is None and limit is None:
            return f"cat -n {quote(path)}"
        first = int(offset or 1)
        last = f"{first + int(limit) - 1}" if limit is not None else "$"
        return f"cat -n {quote(path)} | sed -n '{first},{last}p'"
    if capability == "search":
        include = f" --include={quote(str(arguments['glob']))}" if arguments.get("glob") else ""
        return f"grep -rnE{include} {quote(str(arguments.get('pattern', '')))} {quote(path)}"
    if capability == "find":
        pattern = str(arguments.get("pattern", "*"))
        test = "-path" if "/" in pattern else "-name"
        return f"find {quote(path)} -type f {test} {quote(pattern.removeprefix('**/'))}"
    if capability == "write":
        content = str(arguments.get("content", ""))
        directory = path.rsplit("/", 1)[0] if "/" in path else ""
        mkdir = f"mkdir -p {quote(directory)} && " if directory else ""
        return f"{mkdir}cat > {quote(path)} <<'SIM_EOF'\n{content.rstrip(chr(10))}\nSIM_EOF"
    if capability == "edit":
        script = (
            "import pathlib\n"
            f"p = pathlib.Path({json.dumps(path)})\n"
            f"p.write_text(p.read_text().replace({json.dumps(arguments.get('oldText', ''))}, "
            f"{json.dumps(arguments.get('newText', ''))}, 1))\n"
        )
        return f"python3 - <<'SIM_EOF'\n{script}SIM_EOF"
    return str(arguments.get("command", ""))
