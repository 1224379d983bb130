"""Compaction hooks: real shell commands, run before and after a compaction.

The commands run through /bin/sh in a temporary folder; the context manager around them is
the plain-object harness of test_context_manager (a real ledger, a model call that answers
summary requests).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_server.agent import events
from agent_server.agent.compaction_hooks import (
    MAX_INSTRUCTIONS,
    MAX_OUTPUT,
    CompactionHookRunner,
    HookRun,
    read_before,
    run_hook,
)
from agent_server.agent.session_config import FixedConfig
from agent_server.agent.settings import settings_from_json
from agent_server.context.summary_prompt import SUMMARY_REQUEST_MARKER
from agent_server.context.trigger import CompactionHooks, CompactionSettings
from agent_server.errors import ConfigError
from agent_server.session.entries import CompactionEntry
from agent_server.session.ledger import Ledger
from tests.agent.test_context_manager import SIM_SMALL, Harness, Provider, fill, make_manager
from tests.session.builders import user

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the hooks here are sh scripts")


def environment() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}


# --- one command ---------------------------------------------------------------------------------


async def test_a_hook_gets_the_event_on_its_input_in_the_workspace(tmp_path: Path) -> None:
    run = await run_hook("cat; pwd >&2", b'{"event": "x"}', tmp_path, environment(), 60)
    assert (run.exit_code, run.problem) == (0, None)
    assert json.loads(run.stdout) == {"event": "x"}
    assert run.stderr.strip() == str(tmp_path)


async def test_a_hook_that_runs_too_long_is_stopped_with_its_children(tmp_path: Path) -> None:
    marker = tmp_path / "child-ran"
    command = f"(sleep 5; touch {marker}) & sleep 60"
    run = await run_hook(command, b"{}", tmp_path, environment(), 0.5)
    assert run.exit_code is None
    assert run.problem is not None and "did not finish in 0.5 s" in run.problem
    # The whole process group went: the child never gets to touch its marker.
    ended = await run_hook("sleep 6", b"", tmp_path, environment(), 60)
    assert ended.exit_code == 0 and not marker.exists()


async def test_a_cancelled_hook_is_waited_for_until_its_pipes_are_closed(
    tmp_path: Path, spawned: list[asyncio.subprocess.Process]
) -> None:
    """Before: a cancelled run killed the hook and went, its pipes still open: asyncio's
    transport then outlived the event loop (a test's) and failed some later test when it was
    collected ("Event loop is closed")."""
    running = asyncio.ensure_future(run_hook("sleep 60", b"{}", tmp_path, environment(), 60))
    while not spawned:
        await asyncio.sleep(0.01)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    [process] = spawned
    assert process.returncode is not None
    assert process.stdout is not None and process.stdout.at_eof()
    assert process.stderr is not None and process.stderr.at_eof()


async def test_a_hook_output_is_read_up_to_a_bound(tmp_path: Path) -> None:
    run = await run_hook("head -c 1000000 /dev/zero | tr '\\0' x", b"", tmp_path,
                         environment(), 60)
    assert run.exit_code == 0
    assert len(run.stdout) == MAX_OUTPUT


async def test_a_hook_that_cannot_start_or_fails_is_a_problem(tmp_path: Path) -> None:
    failed = await run_hook("echo broken >&2; exit 3", b"", tmp_path, environment(), 60)
    assert failed.problem is not None and "exited with code 3: broken" in failed.problem
    missing = await run_hook("true", b"", tmp_path / "gone", environment(), 60)
    assert missing.problem is not None and "could not start" in missing.problem


@pytest.mark.parametrize(
    ("code", "stdout", "stderr", "cancel", "instructions", "problem"),
    [
        (0, "", "", False, None, False),
        (0, "Keep the port numbers.\n", "", False, "Keep the port numbers.", False),
        (0, '{"instructions": "Keep the TODO list."}', "", False, "Keep the TODO list.", False),
        (0, '{"cancel": true, "reason": "mid-release"}', "", True, None, False),
        (0, '{"cancel": false}', "", False, None, False),
        (0, '{"cancel": "yes"}', "", False, None, True),
        (0, '{"decision": "block"}', "", False, None, True),
        # JSON of another shape is a problem, not instructions (nor is it pasted in them).
        (0, '["keep", "this"]', "", False, None, True),
        (0, '"Keep the port numbers."', "", False, None, True),
        (0, "42", "", False, None, True),
        (2, "", "a release is running", True, None, False),
    ],
)
def test_a_before_hook_answers_by_exit_code_and_output(
    code: int, stdout: str, stderr: str, cancel: bool, instructions: str | None, problem: bool
) -> None:
    verdict = read_before(HookRun("hook.sh", code, stdout, stderr))
    assert verdict.cancel == cancel
    assert verdict.instructions == instructions
    assert bool(verdict.problems) == problem
    if cancel:
        assert "hook.sh" in verdict.reason
        assert ("mid-release" in verdict.reason) or ("a release is running" in verdict.reason)


async def test_the_runner_joins_instructions_and_stops_at_a_cancel(tmp_path: Path) -> None:
    runner = CompactionHookRunner(tmp_path, "s1", environment)
    hooks = CompactionHooks(before=("echo one", "exit 7", "echo two"))
    verdict = await runner.before(hooks, "threshold", {"tokens": 1})
    assert (verdict.cancel, verdict.instructions) == (False, "one\n\ntwo")
    assert len(verdict.problems) == 1 and "exit 7" in verdict.problems[0]
    stop = CompactionHooks(before=("echo first", "exit 2", f"touch {tmp_path / 'after'}"))
    verdict = await runner.before(stop, "threshold", {"tokens": 1})
    assert verdict.cancel and not (tmp_path / "after").exists()
    long = CompactionHooks(before=(f"head -c {MAX_INSTRUCTIONS + 10} /dev/zero | tr '\\0' k",))
    verdict = await runner.before(long, "manual", {})
    assert verdict.instructions is not None and len(verdict.instructions) == MAX_INSTRUCTIONS
    assert f"cut to {MAX_INSTRUCTIONS} characters (they gave {MAX_INSTRUCTIONS + 10})" in (
        verdict.problems[0]
    )


async def test_an_answer_longer_than_the_read_is_ignored_not_read_in_half(tmp_path: Path) -> None:
    """A hook printing more than MAX_OUTPUT bytes: what was read is a beginning (of a JSON
    object, half of one), so none of it becomes instructions; the other hooks' still do."""
    runner = CompactionHookRunner(tmp_path, "s1", environment)
    half_json = (f"""printf '{{"instructions": "'; head -c {MAX_OUTPUT + 10} /dev/zero | """
                 """tr '\\0' k; printf '"}'""")
    text = f"head -c {MAX_OUTPUT * 4} /dev/zero | tr '\\0' k"
    for command in (half_json, text):
        hooks = CompactionHooks(before=(command, "echo 'Keep the port numbers.'"))
        verdict = await runner.before(hooks, "manual", {})
        assert verdict.instructions == "Keep the port numbers."
        [problem] = verdict.problems
        assert f"printed more than {MAX_OUTPUT:,} bytes" in problem and "ignored" in problem
    # Its exit code still says what it means: 2 cancels.
    cancel = CompactionHooks(before=(f"{text}; exit 2",))
    assert (await runner.before(cancel, "manual", {})).cancel


@pytest.mark.parametrize(
    ("command", "problem"),
    [
        ("printf 'Keep \\377\\376 the notes'", "not UTF-8 text (at byte 5)"),
        ("printf 'Keep\\0the notes'", "binary data (a NUL at byte 4)"),
    ],
)
async def test_an_answer_that_is_not_text_is_ignored(
    tmp_path: Path, command: str, problem: str
) -> None:
    runner = CompactionHookRunner(tmp_path, "s1", environment)
    verdict = await runner.before(CompactionHooks(before=(command,)), "manual", {})
    assert verdict.instructions is None
    [said] = verdict.problems
    assert problem in said and "its output is ignored" in said
    # Text that is UTF-8 (not ASCII) is read as it is.
    accents = CompactionHooks(before=("printf 'Garde les numéros de port.'",))
    verdict = await runner.before(accents, "manual", {})
    assert verdict.instructions == "Garde les numéros de port." and not verdict.problems


@pytest.mark.parametrize(
    ("answer", "cancel", "instructions"),
    [
        ('{"cancel": true, "reason": "mid-release"}', True, None),
        ('{"instructions": "Keep the TODO list."}', False, "Keep the TODO list."),
        ("Keep the port numbers.", False, "Keep the port numbers."),
    ],
)
async def test_an_answer_after_a_byte_order_mark_is_read_as_without_it(
    tmp_path: Path, answer: str, cancel: bool, instructions: str | None
) -> None:
    """PowerShell and Notepad start UTF-8 text with a byte order mark: the JSON after it is
    still an answer, and the mark is no part of the instructions."""
    script = tmp_path / "answer.txt"
    script.write_bytes(b"\xef\xbb\xbf" + answer.encode() + b"\r\n")
    runner = CompactionHookRunner(tmp_path, "s1", environment)
    verdict = await runner.before(CompactionHooks(before=(f"cat {script}",)), "manual", {})
    assert (verdict.cancel, verdict.instructions, verdict.problems) == (cancel, instructions, ())
    if cancel:
        assert verdict.reason.endswith(": mid-release")


@pytest.mark.parametrize(
    "command",
    [
        # Colours (CSI), a window title (OSC, ended by BEL and by ST), a charset switch.
        r"printf '\033[1;31mKeep\033[0m the \033]0;hook\007port\033]8;;x\033\\ numbers.\033(B'",
        # The same as JSON escapes inside the instructions' string.
        r"""printf '{"instructions": "\\u001b[32mKeep\\u001b[0m the port numbers."}'""",
        # A colourful JSON printer (jq -C): the escape sequences around the JSON's tokens.
        r"""printf '\033[1;39m{\033[0m\033[34;1m"instructions"\033[0m: """
        r"""\033[0;32m"Keep the port numbers."\033[0m\033[1;39m}\033[0m'""",
    ],
)
async def test_terminal_escape_sequences_in_an_answer_are_taken_out(
    tmp_path: Path, command: str
) -> None:
    """A colourful script's escape sequences are not instructions for the summariser."""
    runner = CompactionHookRunner(tmp_path, "s1", environment)
    verdict = await runner.before(CompactionHooks(before=(command,)), "manual", {})
    assert (verdict.instructions, verdict.problems) == ("Keep the port numbers.", ())


async def test_a_cancel_reason_in_colour_is_said_without_its_escape_sequences(
    tmp_path: Path,
) -> None:
    runner = CompactionHookRunner(tmp_path, "s1", environment)
    command = r"printf '\033[31mnot during the release\033[0m' >&2; exit 2"
    verdict = await runner.before(CompactionHooks(before=(command,)), "manual", {})
    assert verdict.cancel and verdict.reason.endswith(": not during the release")
    json_reason = r"""printf '{"cancel": true, "reason": "\\u001b[31mmid-release\\u001b[0m"}'"""
    verdict = await runner.before(CompactionHooks(before=(json_reason,)), "manual", {})
    assert verdict.cancel and verdict.reason.endswith(": mid-release")


# --- around a compaction -------------------------------------------------------------------------


def hooked(tmp_path: Path, hooks: CompactionHooks, provider: Provider | None = None) -> Iterator[
    Harness
]:
    provider = provider or Provider()
    seen: list[events.AgentEvent] = []
    settings = CompactionSettings(hooks=hooks)
    with Ledger.create(tmp_path / "s.jsonl", session_id="s", workspace="/w", fsync="never") as led:
        manager = make_manager(
            led,
            provider,
            emit=seen.append,
            config=FixedConfig(SIM_SMALL, SIM_SMALL, settings),
            hooks=CompactionHookRunner(tmp_path, "s", environment),
        )
        manager.begin_turn("t1")
        yield Harness(led, provider, manager, seen, [0.0])


def compactions(h: Harness) -> list[CompactionEntry]:
    return [e for e in h.ledger.tree.entries if isinstance(e, CompactionEntry)]


async def test_a_before_hook_adds_instructions_and_an_after_hook_gets_the_summary(
    tmp_path: Path,
) -> None:
    got_before, got_after = tmp_path / "before.json", tmp_path / "after.json"
    hooks = CompactionHooks(
        before=(f"cat > {got_before}; echo 'Quote the deploy rule word for word.'",),
        after=(f"cat > {got_after}",),
    )
    for h in hooked(tmp_path, hooks):
        fill(h.ledger, 8)
        h.ledger.append_message(user("next"))
        before = h.manager.view().tokens
        await h.manager.prepare()
        [entry] = compactions(h)
        [request] = h.provider.requests
        assert "Quote the deploy rule word for word." in str(request.messages[-1])
        assert SUMMARY_REQUEST_MARKER in str(request.messages[-1])
        event = json.loads(got_before.read_text())
        assert event == {
            "event": "beforeCompaction", "sessionId": "s", "workspace": str(tmp_path),
            "reason": "threshold", "tokens": before, "threshold": 24_576, "window": 32_768,
            "model": "sim-small", "instructions": None,
        }
        after = json.loads(got_after.read_text())
        assert after["event"] == "afterCompaction" and after["reason"] == "threshold"
        assert after["summary"] == entry.summary
        assert (after["tokensBefore"], after["tokensAfter"]) == (before, entry.tokens_after)
        assert after["firstKeptEntryId"] == entry.first_kept_entry_id


async def test_a_cancel_holds_at_the_threshold_but_not_for_an_overflow(tmp_path: Path) -> None:
    hooks = CompactionHooks(before=("echo 'not during the release' >&2; exit 2",))
    for h in hooked(tmp_path, hooks):
        fill(h.ledger, 8)
        h.ledger.append_message(user("next"))
        view = await h.manager.prepare()
        assert compactions(h) == [] and h.provider.requests == []
        assert view.context == h.manager.view().context  # sent as it is
        [finished] = h.of(events.CompactionFinished)
        assert finished.status == "cancelled"
        assert finished.error is not None and "not during the release" in finished.error
        # The card's status says "cancelled"; its error says who and why, once.
        assert finished.error.startswith("compaction hook") and "ancelled" not in finished.error
        # An overflow cannot wait: it compacts anyway, and says so.
        await h.manager.recover_overflow(view, "prompt is too long", rejected=True)
        [entry] = compactions(h)
        assert entry.reason == "overflow"
        notices = [n.message for n in h.of(events.Notice) if n.level == "warning"]
        assert any("runs anyway" in text for text in notices)


@pytest.mark.parametrize(
    ("hooks", "said"),
    [
        # Time enough to exit on a busy machine: the code is what is said.
        (CompactionHooks(before=("exit 9",), timeout=60), "exited with code 9"),
        (CompactionHooks(after=("sleep 30",), timeout=0.5), "did not finish in 0.5 s"),
    ],
    ids=["exits-9", "hangs"],
)
async def test_a_failing_hook_is_reported_and_the_compaction_goes_on(
    tmp_path: Path, hooks: CompactionHooks, said: str
) -> None:
    for h in hooked(tmp_path, hooks):
        fill(h.ledger, 8)
        h.ledger.append_message(user("next"))
        await h.manager.prepare()
        assert len(compactions(h)) == 1
        warnings = [n.message for n in h.of(events.Notice) if n.level == "warning"]
        assert any(said in text for text in warnings)


async def test_a_half_json_answer_never_reaches_the_summary_request(tmp_path: Path) -> None:
    big = tmp_path / "big.sh"
    big.write_text(f"""printf '{{"instructions": "'\n"""
                   f"""head -c {MAX_OUTPUT} /dev/zero | tr '\\0' k\nprintf '"}}'\n""")
    hooks = CompactionHooks(before=(f"sh {big}", "echo 'Keep the port numbers.'"))
    for h in hooked(tmp_path, hooks):
        fill(h.ledger, 8)
        h.ledger.append_message(user("next"))
        await h.manager.prepare()
        assert len(compactions(h)) == 1
        [request] = h.provider.requests
        asked = str(request.messages[-1])
        assert "Keep the port numbers." in asked
        assert '"instructions"' not in asked and "kkkk" not in asked
        warnings = [n.message for n in h.of(events.Notice) if n.level == "warning"]
        assert [w for w in warnings if f"more than {MAX_OUTPUT:,} bytes" in w]


async def test_a_hook_gets_no_secret_from_the_environment(tmp_path: Path) -> None:
    """The session's hooks get a tool command's environment: no provider key, no
    secret-looking variable unless tools.env.pass lists it."""
    from agent_server.agent.tools.environment import tool_environment

    seen = tmp_path / "env.txt"
    base = {"PATH": os.environ.get("PATH", ""), "DEPLOY_TOKEN": "t0k", "PLAIN": "p",
            "ANTHROPIC_API_KEY": "sk-ant-secret-value-1234567890"}
    runner = CompactionHookRunner(
        tmp_path, "s", lambda: tool_environment(base, ("sk-ant-secret-value-1234567890",)).env
    )
    await runner.after(CompactionHooks(after=(f"env > {seen}",)), "manual", {})
    text = seen.read_text()
    assert "PLAIN=p" in text
    assert "DEPLOY_TOKEN" not in text and "sk-ant" not in text


# --- the settings --------------------------------------------------------------------------------


def test_the_hook_and_threshold_settings_are_read_and_checked() -> None:
    settings = settings_from_json({"compaction": {
        "threshold": 0.6, "hooks": {"before": ["./save-notes.sh"], "after": ["logger x"],
                                    "timeout": 10},
    }})
    assert settings.compaction.threshold == 0.6
    assert settings.compaction.hooks == CompactionHooks(("./save-notes.sh",), ("logger x",), 10.0)
    assert settings_from_json({"compaction": {"threshold": 150_000}}).compaction.threshold == (
        150_000
    )
    for bad, key in [
        ({"threshold": "half"}, "compaction.threshold"),
        ({"threshold": 0}, "compaction.threshold"),
        ({"hooks": {"before": "x.sh"}}, "compaction.hooks.before"),
        ({"hooks": {"after": [""]}}, "compaction.hooks.after"),
        ({"hooks": {"timeout": 0}}, "compaction.hooks.timeout"),
        ({"hooks": []}, "compaction.hooks"),
    ]:
        with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
            settings_from_json({"compaction": bad})
