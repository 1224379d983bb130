"""Nothing the turn is working on is lost (issue 26, item 7): a tool result is bounded by the
window, and a compaction in the middle of a turn keeps the turn's prompt (carried verbatim)
and the result the model is waiting for (the last step, kept whole).

Over plain objects first (the bounds, the cut and the carried block together), then real
turns against the simulator over HTTP on a 32k window, where a turn of long command outputs
compacts in its middle: each request after a compaction must still hold the prompt and the
output the model asked for last.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from agent_server.agent.settings import AgentSettings
from agent_server.agent.tools.output import (
    MAX_BYTES,
    StreamingOutput,
    bound_output,
    output_limits,
)
from agent_server.context.carried import carried_budgets, carry
from agent_server.context.cut_point import find_cut_point
from agent_server.context.estimate import estimate_tokens
from agent_server.context.projection import project
from agent_server.context.trigger import (
    DEFAULT_MAX_THRESHOLD,
    CompactionSettings,
    compaction_threshold,
    last_step_tokens,
    max_kept_tokens,
)
from agent_server.llm.messages import (
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from agent_server.llm.models import BUILTIN_MODELS
from agent_server.session.entries import CompactionEntry, MessageEntry
from tests.agent.conftest import agent_run

MODELS = {model.id: model for model in BUILTIN_MODELS}
SMALL = MODELS["sim-small"]
SETTINGS = CompactionSettings()
PROMPT = "Run the whole test suite verbosely and tell me which tests fail, one per line."


def pytest_output(lines: int, tag: str) -> str:
    """A `pytest -v` run of `lines` tests, its verdict on the last line."""
    rows = [
        f"tests/test_module_{n % 37:02d}.py::test_case_{n:04d}_{tag} PASSED"
        f"{' ' * 20}[{100 * (n + 1) // lines:3d}%]"
        for n in range(lines)
    ]
    return "\n".join([*rows, f"======== {lines} passed in 4.21s ({tag}) ========"])


# --- plain objects ----------------------------------------------------------------------------


def test_a_result_is_bounded_by_a_quarter_of_the_threshold_on_a_small_window() -> None:
    small = output_limits(compaction_threshold(SMALL, SETTINGS))
    large = output_limits(compaction_threshold(MODELS["sim-large"], SETTINGS))
    assert small.max_bytes == 24_576 // 4 * 3
    # a large window compacts at 128k tokens (DEFAULT_MAX_THRESHOLD): a quarter of it is more
    # than the 50 KB every result is held to
    assert large.max_bytes == min(MAX_BYTES, DEFAULT_MAX_THRESHOLD // 4 * 3) == MAX_BYTES
    assert output_limits(1_000).max_bytes == 4 * 1024  # never below 4 KB


def test_a_long_output_is_cut_to_the_window_and_saved_whole(tmp_path: Path) -> None:
    limits = output_limits(compaction_threshold(SMALL, SETTINGS))
    text = pytest_output(666, "a")
    bounded = bound_output(text, spill_dir=tmp_path, tool_name="bash", keep="tail", limits=limits)
    assert len(bounded.text.encode()) < limits.max_bytes + 800  # the notice aside
    assert bounded.text.endswith(text.splitlines()[-1])
    assert "Output truncated" in bounded.text
    assert bounded.full_output_path is not None
    assert bounded.full_output_path.read_text() == text
    streaming = StreamingOutput(tmp_path, "bash", limits)
    for line in text.splitlines(keepends=True):
        streaming.write(line)
    streamed = streaming.finish()
    assert streamed.text.endswith("(a) ========") and streamed.total_lines == 667
    assert len(streamed.text.encode()) < limits.max_bytes + 800


def test_a_compaction_in_the_middle_of_a_turn_keeps_its_prompt_and_the_pending_result(
    tmp_path: Path,
) -> None:
    """The cut point's budgets as the context manager passes them on a 32k window: the
    capped result is a last step small enough to keep, and the prompt, summarised with the
    early part of the turn, is carried verbatim."""
    limits = output_limits(compaction_threshold(SMALL, SETTINGS))
    entries: list[MessageEntry] = []

    def add(message: object) -> None:
        parent = entries[-1].id if entries else None
        entries.append(MessageEntry(f"e{len(entries)}", parent, "", message))  # type: ignore[arg-type]

    add(UserMessage.of_text(PROMPT))
    for step in range(4):
        call = ToolCall(f"c{step}", "bash", {"command": f"pytest -v part {step}"})
        add(AssistantMessage((call,), "toolUse"))
        output = bound_output(
            pytest_output(666, str(step)), spill_dir=tmp_path, tool_name="bash", keep="tail",
            limits=limits,
        )
        add(ToolResultMessage(call.id, "bash", (TextContent(output.text),)))
    threshold = compaction_threshold(SMALL, SETTINGS)
    cut = find_cut_point(
        entries,
        keep_recent_tokens=SETTINGS.keep_recent_tokens,
        max_kept_tokens=max_kept_tokens(SMALL, SETTINGS),
        last_step_tokens=last_step_tokens(SMALL, SETTINGS),
    )
    assert cut.kept and cut.kept[-1] is entries[-1]  # the result the model waits for
    assert estimate_tokens(entries[-1].message) < last_step_tokens(SMALL, SETTINGS)
    carried = carry(entries, (*cut.summarize, *cut.turn_prefix), cut.kept, carried_budgets(threshold))
    compaction = CompactionEntry(
        "c", entries[-1].id, "", "S", cut.first_kept_entry_id, 1, None, "threshold",
        carried=carried,
    )
    text = json.dumps([str(m) for m in project([*entries, compaction]).messages])
    assert PROMPT in text and "(3) ========" in text


# --- real turns over HTTP ------------------------------------------------------------------


def _command(tag: str) -> str:
    script = (
        "n = 600\n"
        "for i in range(n):\n"
        f"    print(f'tests/test_module_{{i % 37:02d}}.py::test_case_{{i:04d}}_{tag} PASSED"
        "                    [{100 * (i + 1) // n:3d}%]')\n"
        f"print('END OF OUTPUT {tag}')\n"
    )
    return f"python3 -c {shlex.quote(script)}"


async def test_every_request_after_a_mid_turn_compaction_holds_the_prompt_and_the_result(
    tmp_path: Path,
) -> None:
    # Each output is cut to a command's bound (COMMAND_MAX_BYTES): a dozen pass the threshold.
    steps = [{"tools": [{"name": "bash", "arguments": {"command": _command(str(k))}}]}
             for k in range(12)]
    scenario = {
        "name": "long outputs",
        "turns": [
            {"user": "Never write under logs/. Have a look around first.",
             "steps": [{"tools": [{"name": "ls", "arguments": {"path": "."}}]},
                       {"text": "A small inventory CLI."}]},
            {"user": PROMPT, "steps": [*steps, {"text": "All of them pass."}]},
        ],
    }
    settings = AgentSettings(permissions_mode="allowAll", model="sim-small")
    async with agent_run(tmp_path, scenario=scenario, settings=settings) as run:
        for prompt in ("Never write under logs/. Have a look around first.", PROMPT):
            result = await run.session.run_turn(prompt)
            assert result.stop_reason == "end_turn", result
        requests = run.model_requests
        sources = [r.source for r in requests]
        turn = [i for i, source in enumerate(sources) if source and source.startswith("scenario:1:")]
        summaries = [i for i, source in enumerate(sources) if source == "summary"]
        assert any(turn[0] < i < turn[-1] for i in summaries), sources  # compacted mid-turn
        for index in turn[1:]:
            step = int(sources[index].rsplit(":", 1)[1])  # type: ignore[union-attr]
            body = json.dumps(requests[index].request, ensure_ascii=False)
            assert PROMPT in body, f"request {index} ({sources[index]}) lost the prompt"
            assert f"END OF OUTPUT {step - 1}" in body, f"request {index} lost the result"
        assert not any((s or "").startswith(("fallback", "violation")) for s in sources)


async def test_a_decision_the_model_stated_is_in_every_request_after_the_compaction(
    tmp_path: Path,
) -> None:
    # The model's own words are carried like the user's (context/carried.py): a decision it
    # stated in the middle of an answer reaches the model after the summary, whatever the
    # summary kept, without a recall.
    decision = "we fix the comparison in the search rather than pad the cutoff in the service"
    steps = [{"tools": [{"name": "bash", "arguments": {"command": _command(str(k))}}]}
             for k in range(12)]
    scenario = {
        "name": "a decision, then long outputs",
        "turns": [
            {"user": "Where should the cutoff be fixed?",
             "steps": [{"tools": [{"name": "ls", "arguments": {"path": "."}}]},
                       {"text": f"The search drops towns at the cutoff. So {decision}."}]},
            {"user": PROMPT, "steps": [*steps, {"text": "All of them pass."}]},
        ],
    }
    settings = AgentSettings(permissions_mode="allowAll", model="sim-small")
    async with agent_run(tmp_path, scenario=scenario, settings=settings) as run:
        for prompt in ("Where should the cutoff be fixed?", PROMPT):
            result = await run.session.run_turn(prompt)
            assert result.stop_reason == "end_turn", result
        requests = run.model_requests
        sources = [r.source for r in requests]
        first = sources.index("summary")
        after = [i for i in range(first + 1, len(requests)) if sources[i] != "summary"]
        assert after, sources
        for index in after:
            body = json.dumps(requests[index].request, ensure_ascii=False)
            carried = body[body.index("<assistant-messages>"):body.index("</assistant-messages>")]
            assert decision in carried, f"request {index} ({sources[index]}) lost the decision"


async def test_the_models_words_yield_where_they_would_keep_a_compaction_from_paying(
    tmp_path: Path,
) -> None:
    # A history of the user's own rules and short acknowledgements, compacted by hand: the
    # rules are carried verbatim, so the summary frees little, and the model's words on top
    # would make the context larger. The compaction is kept without them rather than
    # discarded (the ledger keeps them, and recall finds them).
    turns = [{"user": f"Rule {i}: keep the wording of this rule exactly as written here.",
              "steps": [{"text": f"Noted rule {i}: " + "I will follow it in every later step. " * 2}]}
             for i in range(30)]
    settings = AgentSettings(permissions_mode="allowAll", model="sim-small")
    async with agent_run(tmp_path, scenario={"name": "rules", "turns": turns},
                         settings=settings) as run:
        for turn in turns:
            result = await run.session.run_turn(turn["user"])
            assert result.stop_reason == "end_turn", result
        compacted = await run.session.compact()
        assert compacted.outcome == "compacted", compacted.error
        assert compacted.tokens_after < compacted.tokens_before
        entry = compacted.entry
        assert entry is not None and entry.carried is not None
        assert entry.carried.said == () and entry.carried.said_left_out > 0
        assert len(entry.carried.user_messages) > 20  # the rules themselves are all carried
