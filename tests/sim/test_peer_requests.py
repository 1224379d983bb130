"""Real clients' requests, as pi 0.73, Claude Code 2.1 and Codex 0.171 sent them to the
simulator (captured with its request log by `agent-server bench peers`, trimmed, ids and paths
anonymised; see fixtures/peers/README.md): accepted as the real APIs accept them, answered with
the client's own tools, and the strict checks still refusing what the real APIs refuse."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from anthropic import Anthropic
from openai import OpenAI

from agent_server.sim.records import RequestRecord
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator

FIXTURES = Path(__file__).parent / "fixtures" / "peers"
NAMES = sorted(path.stem for path in FIXTURES.glob("*.json"))


def fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def simulator() -> Simulator:
    return Simulator()


@pytest.fixture(scope="module")
def server(simulator: Simulator) -> Any:
    handle = SimServer(simulator).run_in_thread()
    yield handle
    handle.stop()


def send(server: Any, simulator: Simulator, name: str, body: dict[str, Any] | None = None
         ) -> tuple[int, Any, RequestRecord]:
    """POST the body as the client did (its path, streamed or not), through the SDK's raw
    transport; the status, the parsed answer (or error) and the simulator's record."""
    data = fixture(name)
    body = copy.deepcopy(data["body"]) if body is None else body
    body["stream"] = False
    client: Anthropic | OpenAI
    if data["api"] == "anthropic-messages":
        client = Anthropic(base_url=server.base_url, api_key="k", max_retries=0)
        path = data["path"]
    else:
        client = OpenAI(base_url=server.base_url + "/v1", api_key="k", max_retries=0)
        path = data["path"].removeprefix("/v1")
    try:
        answer = client.post(path, body=body, cast_to=object)
        status = 200
    except (anthropic.APIStatusError, openai.APIStatusError) as error:
        status, answer = error.status_code, error.body
        if isinstance(client, OpenAI):  # the openai SDK keeps only the inner "error" object
            answer = {"error": answer}
    finally:
        client.close()
    return status, answer, simulator.records[-1]


@pytest.mark.parametrize("name", NAMES)
def test_every_captured_request_is_accepted(server: Any, simulator: Simulator, name: str) -> None:
    status, answer, record = send(server, simulator, name)
    assert status == 200, answer
    assert record.source is not None and not record.source.startswith("fallback")


def _calls(answer: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    if "content" in answer:
        return [(b["name"], b["input"]) for b in answer["content"] if b["type"] == "tool_use"]
    return [(item["name"], json.loads(item["arguments"])) for item in answer["output"]
            if item["type"] == "function_call"]


def test_claude_code_gets_its_own_tools(server: Any, simulator: Simulator) -> None:
    # Turn 0 starts with `ls .`: Claude Code has no ls, so its Bash runs the listing.
    _, answer, record = send(server, simulator, "claude-code-first-turn")
    assert record.source == "scenario:0:0"
    assert _calls(answer) == [("Bash", {"command": "ls -la ."})]
    # Step 2 reads pyproject.toml and finds *.py: Read with an absolute path, and Glob.
    _, answer, record = send(server, simulator, "claude-code-tool-results")
    assert record.source == "scenario:0:2"
    (read, read_args), (glob, glob_args) = _calls(answer)
    assert read == "Read" and read_args["file_path"].endswith("/pyproject.toml")
    assert read_args["file_path"].startswith("/")
    assert (glob, glob_args) == ("Glob", {"pattern": "**/*.py"})


def test_codex_gets_its_shell(server: Any, simulator: Simulator) -> None:
    _, answer, _ = send(server, simulator, "codex-first-turn")
    assert _calls(answer) == [("exec_command", {"cmd": "ls -la ."})]


@pytest.mark.parametrize("name", ["claude-code-compaction", "codex-compaction", "pi-summary"])
def test_each_clients_summary_request_gets_a_summary(
    server: Any, simulator: Simulator, name: str
) -> None:
    _, answer, record = send(server, simulator, name)
    assert record.source == "summary"
    assert not _calls(answer)
    text = (answer["content"][0]["text"] if "content" in answer
            else answer["output"][-1]["content"][0]["text"])
    assert "## Goal" in text and "stockroom" not in text.split("## Goal")[0]
    if name == "claude-code-compaction":  # it asks for <summary> tags
        assert text.startswith("<summary>") and text.rstrip().endswith("</summary>")


def test_after_a_compaction_the_latest_prompt_is_answered(
    server: Any, simulator: Simulator
) -> None:
    # pi: two user messages in a row; Codex: every earlier prompt kept, then the summary.
    _, _, record = send(server, simulator, "pi-consecutive-user-messages")
    assert record.status == 200
    _, _, record = send(server, simulator, "codex-after-compaction")
    # The last prompt it kept, not the longest; compacted in its middle, the turn goes on to
    # its answer.
    last = len(simulator.scenario.turns[7].steps) - 1
    assert record.source == f"scenario:7:{last}"


# --- the strict checks still hold on real shapes ----------------------------------------------


def _body(name: str) -> dict[str, Any]:
    body: dict[str, Any] = copy.deepcopy(fixture(name)["body"])
    return body


def test_an_unanswered_tool_call_is_still_refused(server: Any, simulator: Simulator) -> None:
    body = _body("claude-code-tool-results")
    body["messages"][-1]["content"] = [{"type": "text", "text": "never mind"}]
    status, answer, _ = send(server, simulator, "claude-code-tool-results", body)
    assert status == 400
    assert "`tool_use` ids were found without `tool_result` blocks" in answer["error"]["message"]


def test_an_orphan_tool_result_is_still_refused(server: Any, simulator: Simulator) -> None:
    body = _body("claude-code-tool-results")
    body["messages"][-1]["content"][0]["tool_use_id"] = "toolu_nobody"
    status, answer, _ = send(server, simulator, "claude-code-tool-results", body)
    assert status == 400
    assert "unexpected `tool_use_id`" in answer["error"]["message"]


def test_a_fifth_cache_breakpoint_is_still_refused(server: Any, simulator: Simulator) -> None:
    body = _body("claude-code-tool-results")
    marks = json.dumps(body).count('"cache_control"')
    assert marks <= 4
    for message in body["messages"]:
        if message["role"] == "user" and isinstance(message["content"], list):
            for block in message["content"]:
                if "cache_control" not in block and marks < 5:
                    block["cache_control"] = {"type": "ephemeral"}
                    marks += 1
    status, answer, _ = send(server, simulator, "claude-code-tool-results", body)
    assert status == 400
    assert "A maximum of 4 blocks with cache_control may be provided" in (
        answer["error"]["message"]
    )


def test_an_unknown_model_is_still_refused(server: Any, simulator: Simulator) -> None:
    body = _body("pi-consecutive-user-messages")
    body["model"] = "claude-nope"
    status, answer, _ = send(server, simulator, "pi-consecutive-user-messages", body)
    assert status == 404 and answer["error"]["type"] == "not_found_error"
    body = _body("codex-first-turn")
    body["model"] = "gpt-nope"
    status, answer, _ = send(server, simulator, "codex-first-turn", body)
    assert status == 404 and answer["error"]["code"] == "model_not_found"


def test_an_unknown_parameter_is_still_refused(server: Any, simulator: Simulator) -> None:
    body = _body("codex-first-turn")
    body["client_metadata_typo"] = {}
    status, answer, _ = send(server, simulator, "codex-first-turn", body)
    assert status == 400 and answer["error"]["code"] == "unknown_parameter"
    body = _body("claude-code-first-turn")
    body["contxt_management"] = {}
    status, answer, _ = send(server, simulator, "claude-code-first-turn", body)
    assert status == 400
    assert answer["error"]["message"] == "contxt_management: Extra inputs are not permitted"


def test_a_missing_function_output_is_still_refused(server: Any, simulator: Simulator) -> None:
    body = _body("codex-compaction")
    body["input"] = [item for item in body["input"]
                     if item.get("type") != "function_call_output"]
    status, answer, _ = send(server, simulator, "codex-compaction", body)
    assert status == 400
    assert answer["error"]["message"].startswith("No tool output found for function call")
