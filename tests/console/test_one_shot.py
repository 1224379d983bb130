"""`agent-server chat "prompt"` run from a script: nobody at a terminal to ask."""

from __future__ import annotations

import json
from pathlib import Path

from agent_server.sim.scenario import parse_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator
from tests.console.test_commands import agent_server

RUNS_A_COMMAND = {
    "name": "runs a command",
    "turns": [
        {
            "user": "count the files",
            "steps": [
                {"tools": [{"name": "bash", "arguments": {"command": "ls | wc -l"}}]},
                {"text": "I could not run it."},
            ],
        }
    ],
}


def tool_results(sessions: Path) -> list[str]:
    ledger = next(sessions.rglob("*.jsonl"))
    messages = [json.loads(line).get("message", {}) for line in ledger.read_text().splitlines()]
    return [
        block.get("text", "")
        for message in messages
        if message.get("role") == "toolResult"
        for block in message.get("content", ())
    ]


def test_a_call_that_needs_asking_is_denied_and_both_the_user_and_the_model_learn_how_to_allow_it(
    tmp_path: Path,
) -> None:
    sessions = tmp_path / "sessions"
    handle = SimServer(Simulator(scenario=parse_scenario(RUNS_A_COMMAND))).run_in_thread()
    try:
        done = agent_server(
            "chat", "--provider", "sim", "--base-url", handle.base_url, "--sessions-dir",
            str(sessions), "count the files", cwd=tmp_path,
        )
    finally:
        handle.stop()
    assert done.returncode == 0, done.stdout + done.stderr
    out = " ".join(done.stdout.split())  # as one line, however Rich wrapped it
    assert "not run: bash needs permission and there is no one to ask" in out
    assert "1 tool call was not run: a one-shot chat cannot ask for permission" in out
    assert "--yes" in out and "permissions.mode" in out
    assert "cancelled" not in out
    [result] = tool_results(sessions)
    assert "no one to ask" in result and "--yes" in result and "permissions.mode" in result


def prompt_texts(sessions: Path) -> list[str]:
    ledger = next(sessions.rglob("*.jsonl"))
    messages = [json.loads(line).get("message", {}) for line in ledger.read_text().splitlines()]
    return [
        block.get("text", "")
        for message in messages
        if message.get("role") == "user"
        for block in message.get("content", ())
    ]


def test_what_is_piped_in_goes_with_the_prompt_and_too_much_is_refused(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    done = agent_server(
        "chat", "--provider", "sim", "--sessions-dir", str(sessions), "summarise this",
        cwd=tmp_path, stdin="line one\nline two\n",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "attached stdin (2 lines)" in done.stdout
    assert prompt_texts(sessions) == ["<stdin>\nline one\nline two\n</stdin>", "summarise this"]

    from agent_server.lsp.wire import MAX_PROMPT_CHARS

    refused = agent_server(
        "chat", "--provider", "sim", "--sessions-dir", str(tmp_path / "refused"), "summarise this",
        cwd=tmp_path, stdin="x" * (MAX_PROMPT_CHARS + 1),
    )
    assert refused.returncode == 2 and refused.stdout == ""
    assert f"stdin holds more than {MAX_PROMPT_CHARS:,} characters" in refused.stderr
    assert "nothing was sent" in refused.stderr
    assert not (tmp_path / "refused").exists() or not list((tmp_path / "refused").rglob("*.jsonl"))


ERRANDS = {
    "name": "five errands",
    "turns": [
        {"user": prompt, "steps": [*tools, {"text": answer}]}
        for prompt, answer, tools in (
            ("errand one: water the ferns", "Ferns watered.", []),
            ("errand two: feed the cat", "Cat fed.", []),
            ("errand three: sort the mail", "Mail sorted.", []),
            (
                "errand four: list the folder",
                "Folder listed.",
                [{"tools": [{"name": "ls", "arguments": {"path": "."}}]}],
            ),
            ("errand five: lock the door", "Door locked.", []),
        )
    ],
}


def test_continuing_a_session_shows_its_last_three_prompts_and_says_where_the_rest_are(
    tmp_path: Path,
) -> None:
    sessions = str(tmp_path / "sessions")
    prompts = [turn["user"] for turn in ERRANDS["turns"]]
    handle = SimServer(Simulator(scenario=parse_scenario(ERRANDS))).run_in_thread()
    try:
        chat = ["chat", "--provider", "sim", "--base-url", handle.base_url, "--sessions-dir", sessions]
        first = agent_server(*chat, prompts[0], cwd=tmp_path)
        assert first.returncode == 0, first.stdout + first.stderr
        prefix = next(Path(sessions).rglob("*.jsonl")).stem[:8]
        for prompt in prompts[1:]:
            done = agent_server(*chat, "--session", prefix, prompt, cwd=tmp_path)
            assert done.returncode == 0, done.stdout + done.stderr
        resumed = agent_server(*chat, "--session", prefix, "next", cwd=tmp_path)
    finally:
        handle.stop()
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    out = resumed.stdout
    for shown_again in ("errand three", "Mail sorted.", "errand four", "✓", "Folder listed.",
                        "errand five", "Door locked."):
        assert shown_again in out
    assert "errand one" not in out and "Ferns watered." not in out
    assert "errand two" not in out and "Cat fed." not in out
    earlier = f"2 earlier prompts not shown: agent-server sessions show {prefix} has them all"
    assert earlier in " ".join(out.split())
    # In order, before what the new prompt brings.
    assert out.index("errand three") < out.index("errand five") < out.index("earlier prompts")


ANSWERS_AT_LENGTH = {
    "name": "answers at length",
    "turns": [
        {
            "user": "explain the layout",
            "steps": [{"text": " ".join(f"word{n}" for n in range(60))}],
        }
    ],
}


def test_an_answer_cut_mid_stream_is_said_to_be_discarded_before_the_retry_answers(
    tmp_path: Path,
) -> None:
    simulator = Simulator(scenario=parse_scenario(ANSWERS_AT_LENGTH), faults="drop@1:5")
    handle = SimServer(simulator).run_in_thread()
    try:
        done = agent_server(
            "chat", "--provider", "sim", "--base-url", handle.base_url, "--sessions-dir",
            str(tmp_path / "sessions"), "explain the layout", cwd=tmp_path,
        )
    finally:
        handle.stop()
    assert done.returncode == 0, done.stdout + done.stderr
    out = " ".join(done.stdout.split())
    said = "✗ partial answer discarded: the call failed mid-answer; the retry answers again"
    assert out.count(said) == 1, out
    cut, _, retried = out.partition(said)
    assert "agent › word0" in cut and "word59" not in cut  # the cut answer, then the line
    assert retried.count("agent › word0") == 1 and "word59" in retried
    assert "Retrying in" in retried  # the retry's notice follows the line
