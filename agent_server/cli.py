"""The command line: agent-server serve | acp | chat | login | logout | demo | sim | bench |
sessions.

Each command's work lives in its own module, imported only when the command runs, so that
`agent-server serve` starts without loading the simulator or the terminal UI.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_server.agent.permissions import PERMISSION_MODES
from agent_server.llm.providers import PROVIDER_NAMES
from agent_server.stderr_log import configure_logging


def absolute_folder(value: str) -> str:
    """A folder given on the command line, relative to the current one, as the setting takes
    it (absolute: agent/settings.py refuses a relative sessionsDir)."""
    return str(Path(value).expanduser().absolute())


def _chat_flags(chat: argparse.ArgumentParser) -> None:
    """`agent-server chat`: one-shot with a prompt, else interactive."""
    chat.add_argument("prompt", nargs="*", help="a one-shot prompt (none: interactive)")
    chat.add_argument("--workspace", default=".", help="the workspace folder (default: here)")
    _settings_flags(chat)
    resume = chat.add_mutually_exclusive_group()
    resume.add_argument("--session", help="continue this session (an id or a unique prefix)")
    resume.add_argument(
        "-c", "--continue", dest="continue_latest", action="store_true",
        help="continue this workspace's latest session",
    )
    chat.add_argument("--yes", action="store_true", help="allow every tool call without asking")


def _serve_flags(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("--stdio", action="store_true", help="serve over stdio (the default)")
    serve.add_argument("--tcp", metavar="HOST:PORT", help="serve over TCP, for debugging")
    serve.add_argument(
        "--trust-editor-settings", action="store_true",
        help="take the settings that carry authority (the permission mode, the sandbox, the "
        "base URL, hooks, MCP servers, the sessions folder, ...) from the editor too: only for "
        "an editor that keeps a workspace's values out of them, as the VS Code extension "
        "does. Without it they come from the config file alone (docs/security.md)",
    )
    serve.add_argument("--config", help="settings file (default: the user config directory)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agent-server",
        description="A language server that runs coding-agent sessions for editors.",
    )
    parser.add_argument("--log-level", default="WARNING", help="stderr log level (default WARNING)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    _serve_flags(commands.add_parser("serve", help="run the language server (stdio by default)"))

    acp = commands.add_parser(
        "acp", help="run as an Agent Client Protocol agent on stdio (Zed, JetBrains, Neovim, Emacs)"
    )
    _settings_flags(acp)
    acp.add_argument(
        "--mode", choices=PERMISSION_MODES, help="the permission mode sessions start in"
    )
    acp.add_argument(
        "action", nargs="?", choices=["login"],
        help="login: keep an API key, as `agent-server login` (an ACP editor's terminal login)",
    )

    _chat_flags(commands.add_parser("chat", help="talk to the agent in this terminal"))

    login = commands.add_parser(
        "login", help="keep the configured provider's API key for you (when the editor's "
        "environment has no variable for it)",
    )
    _settings_flags(login)
    logout = commands.add_parser("logout", help="forget the key `login` kept")
    _settings_flags(logout)
    logout.add_argument("--all", action="store_true", help="forget every key kept")

    sessions = commands.add_parser("sessions", help="list, show or export stored sessions")
    sessions_commands = sessions.add_subparsers(dest="sessions_command", required=True)
    for name, helptext in (
        ("list", "the sessions of a workspace, newest first"),
        ("show", "print a session's transcript"),
        ("export", "write a session as Markdown or its raw JSONL ledger"),
    ):
        sub = sessions_commands.add_parser(name, help=helptext)
        sub.add_argument("--workspace", default=".", help="the workspace folder (default: here)")
        sub.add_argument("--sessions-dir", type=absolute_folder)
        if name != "list":
            sub.add_argument("session_id")
        if name == "export":
            sub.add_argument("--format", choices=("markdown", "jsonl"), default="markdown")
            sub.add_argument("-o", "--output", help="file to write (default: stdout)")

    demo = commands.add_parser(
        "demo", help="a whole agent session over LSP against the simulator (no key needed)"
    )
    demo.add_argument("--turns", type=int, help="stop after this many scenario turns")
    demo.add_argument("--log", metavar="FILE", help="keep the simulator's request log")

    sim = commands.add_parser(
        "sim", help="run the built-in model simulator (Anthropic and OpenAI APIs)"
    )
    sim.add_argument("--host", default="127.0.0.1")
    sim.add_argument("--port", type=int, default=8765, help="0 picks a free port")
    sim.add_argument("--scenario", metavar="FILE", help="JSON or YAML scenario (default: built-in)")
    sim.add_argument("--faults", metavar="SPEC", help="fault injection, see docs/simulator.md")
    sim.add_argument("--log", metavar="FILE", help="append one JSONL line per request")
    sim.add_argument("--summariser", choices=("faithful", "lossy"), default="faithful",
                     help="how the simulated model summarises (see docs/simulator.md)")
    sim.add_argument("--summary-chars", type=int, metavar="N",
                     help="cut each summary to at most N characters")

    bench = commands.add_parser(
        "bench", help="run the benchmarks (from a source checkout) and print their tables"
    )
    _bench_flags(bench)

    return parser


def _bench_flags(bench: argparse.ArgumentParser) -> None:
    """`agent-server bench [SUITE]`: the suites and their options."""
    bench.add_argument(
        "suite", nargs="?", choices=["peers", "recall", "conformance", "scale"],
        help="peers: pi, Claude Code and Codex (installed from npm) and agent-server on one "
        "scripted session against the simulator; recall: the same clients on the real-code "
        "suite, with a simulated model that knows only what its request holds; conformance: "
        "compaction-conformance-kit's canaries through the product's compaction; scale: "
        "the harness on workspaces of 133 to 114,000 files (benchmarks/scale.py)",
    )
    bench.add_argument("--quick", action="store_true", help="smaller sizes: under a minute")
    bench.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    bench.add_argument("--clients", metavar="LIST",
                       help="peers, recall: comma-separated, of agent-server,"
                       "agent-server-anthropic,pi,claude-code,codex; and agent-server with "
                       "the provider's compaction (agent-server+provider, "
                       "agent-server-anthropic+provider) or Anthropic's clearing of tool "
                       "results (agent-server-anthropic+clear)")
    bench.add_argument("--models", metavar="LIST",
                       help="peers, recall: comma-separated simulated models "
                       "(default sim-large,sim-small)")
    bench.add_argument("--summarisers", metavar="LIST",
                       help="recall: comma-separated, of faithful,lossy (default both)")
    bench.add_argument("--sessions", metavar="LIST",
                       help="recall: comma-separated names of the real-code suite's "
                       "sessions (benchmarks/real_code; an unknown one lists them; "
                       "default all)")
    bench.add_argument("--strategies", metavar="LIST",
                       help="recall: agent-server's strategies, comma-separated, of "
                       "benchmarks/strategies.py (default: default)")
    bench.add_argument("--workspaces", metavar="LIST",
                       help="scale: comma-separated, of one-sdist,five-sdists,monorepo "
                       "(default all)")
    bench.add_argument("--measures", metavar="LIST",
                       help="scale: comma-separated, of log_page,growing_log,mentions,"
                       "repo_map,sandbox,search (default all)")
    bench.add_argument("--omniscient", action="store_true",
                       help="recall: a model that never misses what was dropped (every "
                       "step's needs ignored), as every figure before issue 25")
    bench.add_argument("--out", metavar="DIR",
                       help="peers, recall: where the request logs go (default "
                       ".bench/<suite>/<time>)")


def _settings_flags(parser: argparse.ArgumentParser) -> None:
    """The flags that override the settings file (agent/config_file.py reads them)."""
    parser.add_argument("--provider", choices=PROVIDER_NAMES)
    parser.add_argument("--model", help="a model id of the registry, of --models-file, or of "
                        "the server at --base-url (with --provider openai-chat)")
    parser.add_argument("--base-url", help="the API's base URL: a proxy, a local server")
    parser.add_argument("--models-file", metavar="FILE",
                        help="JSON or YAML file of extra models (docs/providers.md)")
    parser.add_argument("--context-window", type=int, metavar="TOKENS",
                        help="the window of a --model only the --base-url server knows "
                        "(default 32768; Ollama: its num_ctx)")
    parser.add_argument("--api-key-env", help="the variable that holds the API key")
    parser.add_argument("--sessions-dir", type=absolute_folder,
                        help="where sessions are kept (relative: to the current folder)")
    parser.add_argument("--config", help="settings file (default: the user config directory)")


def run_bench(quick: bool, json_path: Path | None, peers: dict[str, Any] | None = None,
              suite: str = "peers") -> int:
    """The benchmarks live in the repository's `benchmarks/` package, next to `agent_server/`,
    and are not installed with the wheel: run them from a checkout."""
    import importlib

    checkout = Path(__file__).resolve().parent.parent
    in_checkout = (checkout / "pyproject.toml").is_file() and (
        checkout / "benchmarks" / "__init__.py"
    ).is_file()
    origin = None
    if in_checkout:
        if str(checkout) not in sys.path:
            sys.path.insert(0, str(checkout))
        try:
            benchmarks = importlib.import_module("benchmarks")
            origin = Path(str(benchmarks.__file__)).resolve().parent.parent
        except ImportError:
            origin = None
    if origin != checkout:
        print(
            "agent-server bench runs from a source checkout of agent-server: its `benchmarks/` "
            "package is not part of the installed package. Clone the repository, install it "
            "with `make` (or `pip install -e '.[dev]'`) and run `agent-server bench` or "
            "`make bench` there.",
            file=sys.stderr,
        )
        return 2
    if json_path is not None:
        # `make bench-*` write under .bench/, which a fresh checkout does not have yet.
        json_path.parent.mkdir(parents=True, exist_ok=True)
    if peers is not None:
        module = importlib.import_module(f"benchmarks.{suite}")
        suite_status: int = module.main(**peers)
        return suite_status
    status: int = benchmarks.main(quick=quick, json_path=json_path)
    return status


def _suite_options(args: argparse.Namespace) -> dict[str, Any] | None:
    """The keyword arguments of a named suite's `main` (None: the default benchmarks)."""
    if args.suite is None:
        return None

    def listed(value: str | None) -> list[str] | None:
        return [item.strip() for item in value.split(",") if item.strip()] if value else None

    options: dict[str, Any] = {}
    if args.suite in ("peers", "recall"):
        for key, value in (("clients", args.clients), ("models", args.models)):
            if listed(value):
                options[key] = listed(value)
    if args.suite == "recall":
        options["quick"] = args.quick
        if listed(args.summarisers):
            options["summarisers"] = listed(args.summarisers)
        if listed(args.sessions):
            options["names"] = listed(args.sessions)
        if listed(args.strategies):
            options["strategy_names"] = listed(args.strategies)
        if args.omniscient:
            options["knows_all"] = True
    if args.suite == "scale":
        if listed(args.workspaces):
            options["names"] = listed(args.workspaces)
        if listed(args.measures):
            options["measures"] = listed(args.measures)
    if args.suite in ("conformance", "recall", "scale"):
        options["json_path"] = Path(args.json) if args.json else None
    if args.out:
        options["out_dir"] = Path(args.out)
    return options


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure_logging(str(args.log_level))
    if args.command == "serve":
        from agent_server.lsp.startup import cached_attrs_compilation

        with cached_attrs_compilation():
            from agent_server.lsp.authority import EditorSettings
            from agent_server.lsp.server import serve_stdio, serve_tcp

        editor = EditorSettings(
            trusted=args.trust_editor_settings,
            config=Path(args.config).expanduser() if args.config else None,
        )
        if args.tcp:
            host, _, port = str(args.tcp).rpartition(":")
            return serve_tcp(host or "127.0.0.1", int(port), editor)
        return serve_stdio(editor)
    if args.command == "login" or (args.command == "acp" and args.action == "login"):
        from agent_server.console.login import login

        return login(args)
    if args.command == "logout":
        from agent_server.console.login import logout

        return logout(args)
    if args.command == "acp":
        from agent_server.acp.server import main as acp_main

        return acp_main(args)
    if args.command == "chat":
        from agent_server.console.chat_start import main as chat_main

        return chat_main(args)
    if args.command == "sessions":
        from agent_server.console.sessions import main as sessions_main

        return sessions_main(
            args.sessions_command,
            Path(args.workspace),
            args.sessions_dir,
            session_id=getattr(args, "session_id", None),
            format=getattr(args, "format", None),
            output=getattr(args, "output", None),
        )
    if args.command == "demo":
        from agent_server.console.demo import main as demo_main

        return demo_main(turns=args.turns, log=Path(args.log) if args.log else None)
    if args.command == "sim":
        from agent_server.sim.server import run_cli

        return run_cli(args)
    if args.command == "bench":
        return run_bench(args.quick, Path(args.json) if args.json else None,
                         _suite_options(args), args.suite or "peers")
    raise AssertionError(f"unhandled command {args.command}")
