"""The tests a session follows (agent/tools/followed.py): the names a verdict line gives, the
tests a call defines, their lines kept from the middle of a cut output, and over a real
session: a test that failed in one turn has its passing line in the next turn's cut run."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from agent_server.agent.settings import AgentSettings
from agent_server.agent.tools.followed import MAX_FOLLOWED, defined_tests, followed_tests
from agent_server.agent.tools.output import (
    LINES_PER_TEST,
    OutputLimits,
    SalientLines,
    StreamingOutput,
    failed_tests,
)
from agent_server.llm.messages import (
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from agent_server.session.entries import MessageEntry
from tests.agent.conftest import agent_run


def test_the_test_each_runners_verdict_names() -> None:
    """pytest's node id (its message after ` - ` left out), unittest's name with its class,
    go's test, TAP's and a cross's description (the cross's timing left out). A line that is
    no test's verdict, an expected failure and a name too short to follow give none."""
    text = (
        "FAILED tests/test_a.py::test_parse[1985-W15-5T10:15-0430] - AssertionError: assert x\n"
        'SUBFAILED(id="cases[1]") tests/test_a.py::test_sub - AssertionError: 1 != 2\n'
        "ERROR tests/test_b.py::test_fixture - fixture 'db' not found\n"
        "FAIL: test_toc_nested (test_legacy.TestExtensions.test_toc_nested)\n"
        "--- FAIL: TestParseRange (0.01s)\n"
        "    not ok 2 - ^0.2.3 desugars to >=0.2.3 <0.3.0-0\n"
        "  ✕ adds one and two (5 ms)\n"
        # as a cut shows a line of its middle, and as grep -n does
        "914:     not ok 3 - ~0.2.3 desugars to >=0.2.3 <0.3.0-0\n"
        "12:FAILED tests/test_c.py::test_grepped - E\n"
        "FAILED tests/test_a.py::test_parse[1985-W15-5T10:15-0430] - the same again\n"
        # none of these
        "not ok 5 - a later feature # TODO not written yet\n"
        "ERROR: could not install packages due to an OSError\n"
        "ERROR nightly.transform batch=1187 failed\n"
        "not ok 6 - fast\n"
        "tests/test_a.py::test_y FAILED [ 36%]\n"
        "2 failed, 10 passed in 0.12s\n"
    )
    assert failed_tests(text) == [
        "tests/test_a.py::test_parse[1985-W15-5T10:15-0430]",
        "tests/test_a.py::test_sub",
        "tests/test_b.py::test_fixture",
        "test_toc_nested (test_legacy.TestExtensions.test_toc_nested)",
        "TestParseRange",
        "^0.2.3 desugars to >=0.2.3 <0.3.0-0",
        "adds one and two",
        "~0.2.3 desugars to >=0.2.3 <0.3.0-0",
        "tests/test_c.py::test_grepped",
    ]


def test_the_tests_a_source_defines() -> None:
    source = (
        "class T(TestCase):\n"
        "    def test_unescape_is_deprecated(self):\n"
        "        pass\n"
        "    def helper(self):\n"
        "async def test_fetches_once():\n"
        "func TestParseRange(t *testing.T) {\n"
        "test('keeps the prerelease out', () => {});\n"
        'it("drops a 1.x bound", () => {});\n'
        "def test(self):\n"  # too short a name to follow
        "latest('x')\n"
    )
    assert defined_tests(source) == [
        "test_unescape_is_deprecated", "test_fetches_once", "TestParseRange",
        "keeps the prerelease out", "drops a 1.x bound",
    ]


def _entries(*messages: object) -> list[MessageEntry]:
    return [MessageEntry(f"e{i}", f"e{i - 1}" if i else None, "t", m)  # type: ignore[arg-type]
            for i, m in enumerate(messages)]


def test_a_session_follows_what_failed_and_what_it_wrote_newest_first() -> None:
    def run(call_id: str, output: str) -> list[object]:
        return [AssistantMessage((ToolCall(call_id, "bash", {"command": "pytest"}),), "toolUse"),
                ToolResultMessage(call_id, "bash", (TextContent(output),), is_error=True)]

    # An edit writes the tests its new text defines, not those its old text quotes already.
    edit = ToolCall("c2", "edit", {"path": "tests/test_b.py",
                                   "oldText": "def test_existing_one(self):\n",
                                   "newText": "def test_existing_one(self):\n    pass\n\n"
                                              "def test_the_regression(self):\n    pass\n"})
    entries = _entries(
        UserMessage((TextContent("Run the tests."),)),
        *run("c1", "FAILED tests/test_a.py::test_first - E\nFAILED tests/test_a.py::test_second"),
        AssistantMessage((edit,), "toolUse"),
        ToolResultMessage("c2", "edit", (TextContent("Edited tests/test_b.py"),)),
        *run("c3", "FAILED tests/test_a.py::test_first - still"),
    )
    assert followed_tests(entries) == (
        "tests/test_a.py::test_first", "test_the_regression", "tests/test_a.py::test_second",
    )
    many = _entries(*run("c9", "".join(f"FAILED tests/t.py::test_{i:03d}\n" for i in range(99))))
    assert followed_tests(many) == tuple(f"tests/t.py::test_{i:03d}"
                                         for i in range(98, 98 - MAX_FOLLOWED, -1))


def _verbose_run(tests: int, marks: dict[int, str]) -> str:
    rows = [f"tests/test_m.py::test_case_{i:04d} {marks.get(i, 'PASSED')} "
            f"[{100 * i // tests:3d}%]" for i in range(tests)]
    return "\n".join([*rows, f"===== {tests} passed in 2.0s ====="]) + "\n"


def test_a_cut_keeps_the_lines_of_the_tests_followed(tmp_path: Path) -> None:
    """From the middle of a cut output: the line that names a followed test, at most
    LINES_PER_TEST a test, however the output arrives in chunks; the name standing apart
    (test_case_150 is not test_case_1500's); after the verdicts."""
    rows = _verbose_run(3000, {}).splitlines(keepends=True)
    rows[1600:1600] = [f"tests/test_m.py::test_case_1500 rerun {i}\n" for i in range(4)]
    text = "".join(rows)
    limits = OutputLimits(2000, 8192)
    for size in (50, 4096, len(text)):
        sink = StreamingOutput(tmp_path, "bash", limits,
                               followed=("tests/test_m.py::test_case_1500",))
        for at in range(0, len(text), size):
            sink.write(text[at : at + size])
        bounded = sink.finish()
        notice, body = bounded.text.split("\n\n", 1)
        assert "or name a test that failed or was written earlier in this session" in notice
        kept = [line for line in body.splitlines() if "test_case_1500 " in line]
        assert kept == ["1501: tests/test_m.py::test_case_1500 PASSED [ 50%]",
                        "1601: tests/test_m.py::test_case_1500 rerun 0"][:LINES_PER_TEST]
        assert len(body.encode()) <= 8192
    apart = SalientLines(600, followed=("tests/test_m.py::test_case_150",))
    apart.feed(text)
    apart.finish()
    assert apart.found == [] and not apart.follows
    # A followed line in the head, which the cut shows anyway, takes none of the room of
    # those in the middle.
    room = SalientLines(60, followed=("tests/test_m.py::test_case_0001",
                                      "tests/test_m.py::test_case_0500"))
    room.feed(_verbose_run(1000, {}))
    room.finish()
    assert room.between(10, 990) == ["501: tests/test_m.py::test_case_0500 PASSED [ 50%]"]
    # A line naming two followed tests is kept while either has room: the bare function's
    # name has used its two lines on other cases, the node id of case 9 has not.
    both = SalientLines(600, followed=("test_case", "tests/test_m.py::test_case[9]"))
    both.feed("".join(f"tests/test_m.py::test_case[{i}] PASSED\n" for i in range(12)))
    both.finish()
    assert [line for _, line in both.found] == [
        "tests/test_m.py::test_case[0] PASSED", "tests/test_m.py::test_case[1] PASSED",
        "tests/test_m.py::test_case[9] PASSED"]
    # The verdicts come first: with a room for one line, a failure's, not the followed one's.
    narrow = SalientLines(60, followed=("tests/test_m.py::test_case_0002",))
    narrow.feed(_verbose_run(5, {}) + "FAILED tests/test_m.py::test_case_0004 - E\n")
    narrow.finish()
    assert [line for _, line in narrow.found] == ["FAILED tests/test_m.py::test_case_0004 - E"]


def _script(fails: bool) -> str:
    script = (
        "n = 900\n"
        "for i in range(n):\n"
        "    mark = 'FAILED' if i == 450 and FAILS else 'PASSED'\n"
        "    print(f'tests/test_m.py::test_case_{i:04d} {mark} [{100 * i // n:3d}%]')\n"
        "if FAILS:\n"
        "    print('FAILED tests/test_m.py::test_case_0450 - AssertionError: 1 != 2')\n"
        "print('===== the end =====')\n"
    ).replace("FAILS", str(fails))
    return f"python3 -c {shlex.quote(script)}"


async def test_a_test_that_failed_has_its_line_in_the_next_runs_cut(tmp_path: Path) -> None:
    """Over a real session against the simulator: turn 1's run fails test_case_0450, and
    turn 2's run, where it passes in the middle of the output, is cut with its line kept."""
    scenario = {
        "name": "a failure, then the fix",
        "turns": [
            {"user": "Run the tests.",
             "steps": [{"tools": [{"name": "bash", "arguments": {"command": _script(True)}}]},
                       {"text": "test_case_0450 fails."}]},
            {"user": "Run them again.",
             "steps": [{"tools": [{"name": "bash", "arguments": {"command": _script(False)}}]},
                       {"text": "It passes now."}]},
        ],
    }
    settings = AgentSettings(permissions_mode="allowAll", model="sim-large")
    async with agent_run(tmp_path, scenario=scenario, settings=settings) as run:
        for prompt in ("Run the tests.", "Run them again."):
            result = await run.session.run_turn(prompt)
            assert result.stop_reason == "end_turn", result
        last = json.dumps(run.model_requests[-1].request, ensure_ascii=False)
        assert "Output truncated" in last
        assert "451: tests/test_m.py::test_case_0450 PASSED [ 50%]" in last
