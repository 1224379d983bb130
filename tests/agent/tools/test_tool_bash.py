"""bash: real subprocesses; exit codes, streaming, timeouts, cancellation, a clean environment."""

from __future__ import annotations

import asyncio
import os
import re
import signal
from pathlib import Path

import pytest

from agent_server.agent.tools import ToolContext, run_tool
from agent_server.agent.tools import bash as bash_tool
from agent_server.agent.tools import output as output_module
from agent_server.agent.tools.bash import BashTool
from agent_server.agent.tools.environment import tool_environment
from agent_server.agent.tools.grep import GrepTool
from agent_server.agent.tools.read import ReadTool
from agent_server.redaction import REDACTION_NOTE

BASH = BashTool()


def group_members(pgid: int) -> set[int]:
    """Live (non-zombie) processes in the process group `pgid`."""
    members: set[int] = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if fields[2] == str(pgid) and fields[0] != "Z":
            members.add(int(name))
    return members


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return state[state.rfind(")") + 2] != "Z"


def file_size(path: str) -> int:
    return os.stat(path).st_size


def file_text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def file_lines(path: str) -> int:
    with open(path, encoding="utf-8") as handle:
        return sum(1 for _ in handle)


async def wait_until(condition: object, what: str, limit: float = 60.0) -> None:
    """Polls `condition` until true; fails (not a timing assert: a hang guard) after `limit`."""
    assert callable(condition)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while not condition():
        if loop.time() > deadline:
            pytest.fail(f"gave up waiting for {what}")
        await asyncio.sleep(0.02)


async def test_output_and_exit_code_zero(ctx: ToolContext, workspace: Path) -> None:
    result = await run_tool(BASH, {"command": "echo hello; echo oops >&2"}, ctx)
    assert not result.is_error
    assert result.text == "hello\noops\n"
    assert result.details is not None
    assert result.details["exitCode"] == 0


async def test_runs_in_the_workspace(
    ctx: ToolContext, workspace: Path, real_workspace: Path
) -> None:
    (workspace / "marker.txt").write_text("here\n")
    result = await run_tool(BASH, {"command": "pwd; cat marker.txt"}, ctx)
    assert result.text.splitlines() == [str(real_workspace), "here"]


async def test_non_zero_exit_is_an_error_with_the_code(ctx: ToolContext) -> None:
    result = await run_tool(BASH, {"command": "echo failing; exit 3"}, ctx)
    assert result.is_error
    assert result.text == "failing\n\nExit code 3."
    assert result.details is not None
    assert result.details["exitCode"] == 3


async def test_no_output(ctx: ToolContext) -> None:
    result = await run_tool(BASH, {"command": "true"}, ctx)
    assert result.text == "(no output)"
    assert result.details is not None and "ending" not in result.details


async def test_how_the_output_ended_is_in_the_details_without_its_colours(
    ctx: ToolContext,
) -> None:
    # What a compaction carries beside a command that worked (context/carried.py): a short
    # output whole (a reproduction's lines), a long one's last line (a run's verdict); not
    # the note of a cut, nor the terminal's colours.
    short = await run_tool(BASH, {"command": "printf 'a\n\033[32m5 passed\033[0m in 0.1s\n\n'"},
                           ctx)
    assert short.details is not None and short.details["ending"] == "a\n5 passed in 0.1s"
    # Its lines as they are: a table's alignment kept, blank lines left out.
    table = await run_tool(BASH, {"command": "printf '  1,234.5\\n\\n   12.25  \\n'"}, ctx)
    assert table.details is not None and table.details["ending"] == "  1,234.5\n   12.25"
    lines = "; ".join(f"echo 'line {i} of a longer report'" for i in range(12))
    longer = await run_tool(BASH, {"command": f"{lines}; echo 'verdict: 12 lines'"}, ctx)
    assert longer.details is not None and longer.details["ending"] == "verdict: 12 lines"
    cut = await run_tool(BASH, {"command": "seq 1 20000; echo verdict: done"}, ctx)
    assert cut.details is not None and cut.details["truncated"]
    assert cut.details["ending"] == "verdict: done"
    wide = await run_tool(BASH, {"command": "printf '%0500d\\n' 7"}, ctx)
    assert wide.details is not None and len(wide.details["ending"]) == 200
    assert wide.details["ending"].endswith("…")
    # A run that ends with a block of counts (Node's TAP): the block, without its timing.
    counts = "; ".join(f"echo '# {key} {value}'" for key, value in (
        ("tests", 40), ("pass", 38), ("fail", 2), ("todo", 0), ("duration_ms", 78.16)))
    tap = await run_tool(BASH, {"command": f"{lines}; echo 1..40; {counts}"}, ctx)
    assert tap.details is not None
    assert tap.details["ending"] == "# tests 40 · # pass 38 · # fail 2 · # todo 0"
    # A last line that only looks like a count stays the last line.
    one = await run_tool(BASH, {"command": f"{lines}; echo 'total 42'"}, ctx)
    assert one.details is not None and one.details["ending"] == "total 42"


async def test_a_command_starts_with_sigint_as_a_terminal_gives_it(ctx: ToolContext) -> None:
    """A server started with SIGINT ignored (a script's background job) or blocked would pass
    that on through exec, and through the sandbox: each command starts with SIGINT and
    SIGQUIT at their defaults and neither blocked, so that Ctrl-C in the editor's terminal
    reaches it."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGQUIT})
    try:
        command = "grep -E '^Sig(Ign|Blk)' /proc/$$/status"
        result = await run_tool(BASH, {"command": command}, ctx)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        signal.signal(signal.SIGINT, previous)
    masks = dict(line.split(":", 1) for line in result.text.splitlines() if line[:3] == "Sig")
    bits = (1 << (signal.SIGINT - 1)) | (1 << (signal.SIGQUIT - 1))
    assert int(masks["SigIgn"], 16) & bits == 0, result.text
    assert int(masks["SigBlk"], 16) & bits == 0, result.text


def test_a_command_is_started_without_forking_the_server_when_nothing_needs_resetting(
) -> None:
    """The reset runs in the child before exec, which forks the whole server; only where
    this thread holds SIGINT or SIGQUIT ignored or blocked is it added."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGQUIT})
    quit_before = signal.signal(signal.SIGQUIT, signal.SIG_DFL)
    try:
        assert bash_tool._as_a_terminal_starts_it(None) is None
        signal.signal(signal.SIGQUIT, signal.SIG_IGN)
        assert callable(bash_tool._as_a_terminal_starts_it(None))
        signal.signal(signal.SIGQUIT, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        assert callable(bash_tool._as_a_terminal_starts_it(None))
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        signal.signal(signal.SIGQUIT, quit_before)
        signal.signal(signal.SIGINT, before)


async def test_killed_by_a_signal(ctx: ToolContext) -> None:
    result = await run_tool(BASH, {"command": "kill -KILL $$"}, ctx)
    assert result.is_error
    assert "killed by signal SIGKILL" in result.text


async def test_output_streams_through_on_output(workspace: Path, spill_dir: Path) -> None:
    pieces: list[str] = []
    seen_before_exit = asyncio.Event()
    release = workspace / "release"

    def on_output(piece: str) -> None:
        pieces.append(piece)
        if "first" in piece:
            seen_before_exit.set()

    ctx = ToolContext(workspace, spill_dir, on_output=on_output)
    # The command waits until the test has seen its first line: output must stream while
    # the command is still running, not arrive at the end.
    command = "echo first; while [ ! -e release ]; do sleep 0.02; done; echo second"
    task = asyncio.create_task(run_tool(BASH, {"command": command}, ctx))
    await asyncio.wait_for(seen_before_exit.wait(), 60)
    assert not task.done()
    release.write_text("")
    result = await task
    assert "".join(pieces) == "first\nsecond\n"
    assert result.text == "first\nsecond\n"


async def test_a_failing_on_output_callback_does_not_break_the_call(
    workspace: Path, spill_dir: Path
) -> None:
    def on_output(piece: str) -> None:
        raise RuntimeError("display went away")

    ctx = ToolContext(workspace, spill_dir, on_output=on_output)
    result = await run_tool(BASH, {"command": "echo still fine"}, ctx)
    assert result.text == "still fine\n"


async def test_timeout_kills_the_whole_process_group(workspace: Path, spill_dir: Path) -> None:
    # 3 s: time for bash to start and print before it is killed, on a busy machine too.
    ctx = ToolContext(workspace, spill_dir, bash_timeout=3)
    command = "sleep 60 & echo child $!; echo partial; sleep 60; wait"
    result = await run_tool(BASH, {"command": command}, ctx)
    assert result.is_error
    assert "timed out after 3 seconds" in result.text
    assert "partial" in result.text  # the output so far is kept
    assert result.details is not None
    assert result.details["timedOut"] is True
    child = int(result.text.split("child ")[1].split()[0])
    await wait_until(lambda: not alive(child), "the background child to die")


async def test_timeout_argument_overrides_the_default(ctx: ToolContext) -> None:
    result = await run_tool(BASH, {"command": "sleep 30", "timeout": 1}, ctx)
    assert result.is_error
    assert "timed out after 1 seconds" in result.text


async def test_timeout_above_the_maximum_is_refused(ctx: ToolContext) -> None:
    result = await run_tool(BASH, {"command": "true", "timeout": 3600}, ctx)
    assert result.is_error
    assert "timeout: expected a number <= 600" in result.text


async def test_cancelling_kills_the_command_and_its_children(
    workspace: Path, spill_dir: Path
) -> None:
    streamed: list[str] = []
    ctx = ToolContext(workspace, spill_dir, on_output=streamed.append)
    command = 'echo "shell $$"; sleep 60 & sleep 60; wait'
    task = asyncio.create_task(run_tool(BASH, {"command": command}, ctx))
    await wait_until(lambda: "shell " in "".join(streamed), "the shell to report its pid")
    shell = int("".join(streamed).split("shell ")[1].split()[0])
    # The shell leads its own process group: both sleeps are in it.
    await wait_until(lambda: len(group_members(shell)) >= 3, "both sleeps to start")
    members = group_members(shell)
    assert shell in members
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # Zombies do not count: reaping orphans is init's job, and some inits are slow at it.
    await wait_until(lambda: not any(alive(pid) for pid in members), "the group to die")
    assert not group_members(shell)


async def test_children_that_ignore_sigterm_get_sigkill(workspace: Path, spill_dir: Path) -> None:
    streamed: list[str] = []
    ctx = ToolContext(workspace, spill_dir, on_output=streamed.append)
    command = "trap '' TERM; sleep 60 & echo child $!; wait"
    task = asyncio.create_task(run_tool(BASH, {"command": command}, ctx))
    await wait_until(lambda: "child " in "".join(streamed), "the child to start")
    child = int("".join(streamed).split("child ")[1].split()[0])
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await wait_until(lambda: not alive(child), "the child to be killed")


async def test_background_jobs_do_not_hold_the_call(ctx: ToolContext) -> None:
    result = await run_tool(BASH, {"command": "sleep 30 & echo $! > bg.pid; echo started"}, ctx)
    assert not result.is_error
    assert result.text.startswith("started\n")
    assert "still running" in result.text
    pid = int((ctx.workspace / "bg.pid").read_text())
    os.kill(pid, signal.SIGKILL)


async def test_secret_variables_are_not_in_the_environment(
    workspace: Path, spill_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-ant-test-0123456789abcdef"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    monkeypatch.setenv("MY_PROVIDER_KEY_VAR", key)  # the provider key under another name
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_faketoken")
    monkeypatch.setenv("DB_PASSWORD", "hunter2")
    monkeypatch.setenv("APP_SECRET", "s3cr3t")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
    monkeypatch.setenv("DATABASE_URL", "postgres://me:pw1234@db/app")
    monkeypatch.setenv("SOME_SETTING", "sk-proj-0123456789abcdefghij")  # a key by its shape
    monkeypatch.setenv("NPM_TOKEN", "npm-listed")
    monkeypatch.setenv("HARMLESS_SETTING", "visible")
    ctx = ToolContext(
        workspace,
        spill_dir,
        secrets=(key,),
        env_pass=("NPM_*", "ANTHROPIC_API_KEY"),  # the provider key never passes
    )
    result = await run_tool(BASH, {"command": "env"}, ctx)
    names = {line.split("=", 1)[0] for line in result.text.splitlines() if "=" in line}
    assert {"HARMLESS_SETTING", "NPM_TOKEN"} <= names
    for name in (
        "ANTHROPIC_API_KEY",
        "MY_PROVIDER_KEY_VAR",
        "GITHUB_TOKEN",
        "DB_PASSWORD",
        "APP_SECRET",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_ACCESS_KEY_ID",
        "DATABASE_URL",
        "SOME_SETTING",
    ):
        assert name not in names, name
    for value in ("sk-ant-test", "ghp_faketoken", "hunter2", "s3cr3t", "wJalrXUtnFEMI", "pw1234"):
        assert value not in result.text


def test_tool_environment_decides_by_name_value_and_the_pass_list() -> None:
    env = {
        "PATH": "/bin",
        "MY_KEY_VAR": "the-secret",
        "openai_api_key": "x",
        "TOKENIZERS_PARALLELISM": "false",
        "KEYBOARD": "us",
        "SSH_KEY_PATH": "/home/me/.ssh/id",
        "OTHER": "ok",
    }
    out = tool_environment(env, secrets=("the-secret",))
    assert out.env == {"PATH": "/bin", "TOKENIZERS_PARALLELISM": "false", "KEYBOARD": "us", "OTHER": "ok"}
    assert out.withheld == ("MY_KEY_VAR", "SSH_KEY_PATH", "openai_api_key")
    listed = tool_environment(env, secrets=("the-secret",), passed=("SSH_*", "MY_KEY_VAR"))
    assert "SSH_KEY_PATH" in listed.env and "MY_KEY_VAR" not in listed.env



# Variables holding a URL with a credential in it, whatever their name; and names that say so.
URL_SECRET_VARIABLES = {
    "SENTRY_DSN": "https://abc123key@o1.ingest.sentry.io/42",
    "ERROR_REPORTING": "https://f00dfeedkey@o2.ingest.sentry.io/7",
    "SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/T000/B000/XXXXSECRET",
    "NOTIFY_URL": "https://hooks.slack.com/services/T111/B111/YYYYSECRET",
    "DISCORD_HOOK": "https://discord.com/api/webhooks/1234567/Zk9fGhQ2",
    "TEAMS_HOOK": "https://outlook.office.com/webhook/a1b2c3/IncomingWebhook/f6",
    "TEAMS_HOOK_2": "https://contoso.webhook.office.com/webhookb2/a1b2c3/IncomingWebhook/f6",
    "ZAP": "https://hooks.zapier.com/hooks/catch/123456/abcdef/",
    "CACHE_URL": "redis://:s3cretpw@cache:6379/0",
    "FEED_URL": "https://api.example.com/v1/feed?token=Tk8sQ2",
    "GRAPH_URL": "https://graph.example.com/me?fields=id&access_token=EAAB9x",
    "SEARCH_URL": "https://api.example.com/q?api_key=k3y9",
    "MAPS_URL": "https://maps.example.com/js?key=AbC123",
    "BLOB_URL": "https://acct.blob.core.windows.net/c/b.txt?sv=2021-08-06&sig=Zx9q",
    "ERRORS_DSN": "not-a-url-but-the-name-says-so",
    "BUILD_WEBHOOK": "plain-value",
}
ORDINARY_URL_VARIABLES = {
    "HTTP_PROXY": "http://proxy:3128",
    "PIP_INDEX_URL": "https://pypi.org/simple",
    "DOCS_URL": "https://example.com/search?q=hello&page=2",
    "REPO_URL": "ssh://git@github.com/owner/repo.git",
}


def test_urls_with_credentials_are_withheld_whatever_the_name() -> None:
    out = tool_environment({**URL_SECRET_VARIABLES, **ORDINARY_URL_VARIABLES})
    assert out.env == ORDINARY_URL_VARIABLES
    assert out.withheld == tuple(sorted(URL_SECRET_VARIABLES))
    listed = tool_environment(URL_SECRET_VARIABLES, passed=("SENTRY_DSN",))
    assert listed.env == {"SENTRY_DSN": URL_SECRET_VARIABLES["SENTRY_DSN"]}


async def test_urls_with_credentials_are_not_in_the_environment_nor_the_output(
    workspace: Path, spill_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {**URL_SECRET_VARIABLES, **ORDINARY_URL_VARIABLES}.items():
        monkeypatch.setenv(name, value)
    (workspace / "notes.txt").write_text("\n".join(URL_SECRET_VARIABLES.values()) + "\n")
    ctx = ToolContext(workspace, spill_dir)
    result = await run_tool(BASH, {"command": "env; cat notes.txt"}, ctx)
    names = {line.split("=", 1)[0] for line in result.text.splitlines() if "=" in line}
    assert set(ORDINARY_URL_VARIABLES) <= names
    assert not names & set(URL_SECRET_VARIABLES), names & set(URL_SECRET_VARIABLES)
    for secret in ("abc123key", "f00dfeedkey", "XXXXSECRET", "YYYYSECRET", "Zk9fGhQ2",
                   "a1b2c3", "abcdef", "s3cretpw", "Tk8sQ2", "EAAB9x", "k3y9", "AbC123", "Zx9q"):
        assert secret not in result.text, secret
    # From the file: the hosts stay, so that the model sees what the URLs are.
    assert "https://[redacted]@o1.ingest.sentry.io/42" in result.text
    assert "https://hooks.slack.com/services/[redacted]" in result.text
    assert "https://api.example.com/v1/feed?token=[redacted]" in result.text
    assert result.text.endswith(REDACTION_NOTE)


async def test_secrets_are_scrubbed_from_streamed_and_returned_output(
    workspace: Path, spill_dir: Path
) -> None:
    streamed: list[str] = []
    ctx = ToolContext(
        workspace, spill_dir, on_output=streamed.append, secrets=("correct-horse-battery",)
    )
    result = await run_tool(BASH, {"command": "echo token=correct-horse-battery"}, ctx)
    assert result.text == f"token=[redacted]\n\n\n{REDACTION_NOTE}"  # the model is told
    assert "".join(streamed) == "token=[redacted]\n"


async def test_long_output_keeps_the_head_and_tail_and_spills_the_rest(
    ctx: ToolContext, spill_dir: Path
) -> None:
    result = await run_tool(BASH, {"command": "seq 1 10000; echo 'BUILD FAILED'; exit 1"}, ctx)
    assert result.is_error
    lines = result.text.splitlines()
    # A command's 8 KB: the head (a quarter of the bytes, at most a quarter of the 2,000
    # lines), the gap's line, the tail in the rest
    assert lines[0].startswith("[Output truncated: 8248 (lines 501-8748) of 10001 lines were "
                               "cut; showing the first 500, the last 1253.")
    assert lines[-3:] == ["BUILD FAILED", "", "Exit code 1."]
    assert lines[2:5] == ["1", "2", "3"] and "\n500\n[lines 501-8748 cut]\n8749\n" in result.text
    bound = output_module.COMMAND_MAX_BYTES
    assert bound < len(result.text.encode()) < bound + 1024
    assert result.details is not None
    full = spill_dir / Path(result.details["fullOutputPath"]).name
    assert str(full) == result.details["fullOutputPath"]
    assert full.read_text().splitlines() == [*map(str, range(1, 10001)), "BUILD FAILED"]
    page = await run_tool(ReadTool(), {"path": str(full), "offset": 1, "limit": 2}, ctx)
    assert page.text.splitlines()[:2] == ["1", "2"]
    # The result says "or search it with grep": grep reaches the saved file as read does.
    assert "search it with grep" in result.text
    for rg in ("auto", None):  # ripgrep when installed, and the Python fallback
        found = await run_tool(GrepTool(rg=rg), {"pattern": "^4711$", "path": str(full)}, ctx)
        assert not found.is_error, found.text
        assert found.text.splitlines() == ["4711:4711"]


async def test_one_huge_line_is_bounded(ctx: ToolContext) -> None:
    result = await run_tool(BASH, {"command": "head -c 300000 /dev/zero | tr '\\0' x"}, ctx)
    assert len(result.text.encode()) < 52 * 1024
    assert result.details is not None
    assert file_size(result.details["fullOutputPath"]) == 300000


async def test_title_names_the_command() -> None:
    assert BASH.title({"command": "npm test"}) == "Run: npm test"
    assert BASH.title({"command": "set -e\nmake"}) == "Run: set -e …"
    assert BASH.title({}) == "Run: ?"


async def test_the_saved_output_is_capped_and_says_what_it_left_out(
    ctx: ToolContext, spill_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(output_module, "MAX_SAVED_BYTES", 1024 * 1024)  # 64 MB in the product
    # 5 MB: 1 MB is saved, then the end; what the result shows is at the end of the file.
    result = await run_tool(BASH, {"command": "yes AAAA | head -c 5000000; echo END"}, ctx)
    assert result.details is not None
    saved = Path(result.details["fullOutputPath"])
    assert result.details["totalLines"] == 1_000_001
    left_out = result.details["fullOutputLeftOutBytes"]
    assert 3_800_000 < left_out < 4_000_000  # 5 MB but the first 1 MB and the tail held
    first = result.text.splitlines()[0]
    assert first.startswith("[Output truncated: ")
    assert (
        f"The saved file is cut too: {left_out / 1024 / 1024:.1f} MB of the output in the "
        "middle were left out (it keeps the first "
    ) in first
    content = file_text(saved)
    assert file_size(str(saved)) < 1024 * 1024 + 100 * 1024
    assert content.startswith("AAAA\n" * 1000)
    note = f"[{left_out / 1024 / 1024:.1f} MB of output ("
    assert note in content
    assert content.endswith(result.text.split(" cut]\n", 1)[1] + "\n")  # its tail
    assert content.startswith(result.text.split("\n\n", 1)[1].split("\n[lines ", 1)[0])
    assert content.endswith("AAAA\nEND\n")


async def test_streamed_output_is_bounded_like_a_tool_result(
    workspace: Path, spill_dir: Path
) -> None:
    """The editor's live view gets a tool result's bounds (2,000 lines here), more than the
    model's copy of a command's output (COMMAND_MAX_BYTES)."""
    streamed: list[str] = []
    ctx = ToolContext(workspace, spill_dir, on_output=streamed.append)
    result = await run_tool(BASH, {"command": "seq 100001 400000"}, ctx)
    live = "".join(streamed)
    assert live.startswith("100001\n100002\n") and "\n102000\n" in live
    assert "\n102001\n" not in live
    assert live.rstrip().endswith("passed 2000 lines. The end of it will be shown when the "
                                  "command finishes, and all of it is saved to a file.]")
    assert len(result.text.encode()) < output_module.COMMAND_MAX_BYTES + 1024 < len(live)
    # The end comes with the result, which names the file that holds everything.
    assert result.text.rstrip().endswith("400000")
    assert result.details is not None
    assert file_lines(result.details["fullOutputPath"]) == 300000


async def test_what_the_model_reads_of_an_output_is_text(ctx: ToolContext) -> None:
    """Issue 44, item 6: colours stay (the editor draws them); every other escape sequence
    (OSC 52 writes a terminal's clipboard, OSC 8 makes a link, ESC [2J clears the screen) is
    taken out whole; a lone ESC, a CR, a bidi override become visible escapes; CR LF line
    endings are line breaks."""
    command = (
        r"printf '\033[31mred\033[0m\n\033]52;c;cHduZWQ=\007copied\n"
        r"\033]8;;http://evil\033\\link\033]8;;\033\\\n\033[2Jlone\033\nover\rwrite\n"
        r"\342\200\256txt.exe\nwin\r\n'"
    )
    text = (await run_tool(BASH, {"command": command}, ctx)).text
    uncoloured = re.sub("\x1b\\[[0-9;]*m", "", text)
    assert "\x1b" not in uncoloured and "\r" not in text and "\u202e" not in text, repr(text)
    assert text.startswith("\x1b[31mred\x1b[0m\n"), repr(text)
    assert "copied\nlink\nlone\\x1b\nover\\rwrite\n\\u202etxt.exe\nwin" in text, repr(text)
