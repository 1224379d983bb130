"""recall (issue 45): the session's own history, searched and read, across compactions, on
the branch the session is on."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agent_server.agent.tools import ToolContext, run_tool
from agent_server.agent.tools import recall as recall_tool
from agent_server.agent.tools.bash import BashTool
from agent_server.agent.tools.recall import (
    EXCERPT_CHARS,
    FIRST_EXCERPT_CHARS,
    MAX_EXCERPTS,
    PAGE_CHARS,
    RecallTool,
    excerpt,
    find,
    lower,
    occurrences,
    query_terms,
    recallable,
    word_starts,
)
from agent_server.agent.tools.registry import default_tools
from agent_server.llm.messages import (
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from agent_server.session.entries import CompactionEntry
from agent_server.session.ledger import Ledger

RULE = "Never edit CHANGELOG: the release manager writes it."
OUTPUT = "FAILED tests/test_table.py::test_commas - AssertionError: '1,234.5' != ' 1,234.5'"


def prompt(text: str) -> UserMessage:
    return UserMessage(content=(TextContent(text),))


def answer(text: str, *calls: ToolCall) -> AssistantMessage:
    return AssistantMessage(
        content=(TextContent(text), *calls), stop_reason="toolUse" if calls else "stop"
    )


def result(call: ToolCall, text: str) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call.id, tool_name=call.name, content=(TextContent(text),)
    )


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    """A session: a rule, a long failing test run, a compaction that summarised both away,
    then a rewind whose abandoned branch said something recall must not find."""
    ledger = Ledger.create(tmp_path / "s.jsonl", session_id="s", workspace=str(tmp_path))
    ledger.append_message(prompt(f"Two rules. {RULE} Then run the tests."))
    run = ToolCall("c1", "bash", {"command": "pytest -q tests"})
    ledger.append_message(answer("Running them.", run))
    noise = "\n".join(f"tests/test_other.py::test_{n} PASSED" for n in range(300))
    ledger.append_message(result(run, f"{noise}\n{OUTPUT}\n{noise}"))
    ledger.append_message(answer("Loosening the regex did not help: the test fails the same."))
    kept = ledger.append_message(prompt("Now fix the padding."))
    ledger.add(
        CompactionEntry,
        summary="Goal: fix decimal alignment.", first_kept_entry_id=kept.id,
        tokens_before=30_000, reason="threshold", tokens_after=None,
    )
    before_rewind = ledger.leaf_id
    ledger.append_message(prompt("Use the abandoned approach with zebra stripes."))
    ledger.rewind(before_rewind)
    ledger.append_message(prompt("Go on with the padding."))
    return ledger


def reads(ledger: Ledger, count: int, said: str, text: str) -> None:
    """`count` reads, each answered with `said` and resulting in `text` (its `{n}` the read's
    number): results that compete with the one a test looks for."""
    for n in range(count):
        read = ToolCall(f"r{n}", "read", {"path": f"file_{n}.py"})
        ledger.append_message(answer(said, read))
        ledger.append_message(result(read, text.format(n=n)))


def context(ctx: ToolContext, ledger: Ledger) -> ToolContext:
    return dataclasses.replace(ctx, history=lambda: recallable(ledger.tree.branch()))


async def test_recall_finds_a_rule_a_compaction_summarised_away(
    ctx: ToolContext, ledger: Ledger
) -> None:
    shown = (await run_tool(RecallTool(), {"query": "CHANGELOG rule"}, context(ctx, ledger))).text
    assert RULE in shown
    assert "the user's prompt, turn 1" in shown


async def test_recall_cuts_a_long_output_to_the_stretch_that_matches(
    ctx: ToolContext, ledger: Ledger
) -> None:
    done = await run_tool(RecallTool(), {"query": "test_commas failed"}, context(ctx, ledger))
    assert OUTPUT in done.text
    assert "bash result (pytest -q tests)" in done.text
    assert len(done.text) < MAX_EXCERPTS * (EXCERPT_CHARS + 200)
    # The whole entry is a page at a time, from where it says.
    entry = done.text.split("--- entry ", 2)[1].split(":", 1)[0]
    page = await run_tool(RecallTool(), {"entry": entry}, context(ctx, ledger))
    head = page.text.split("\n", 1)[0]
    last = int(head.split("lines 1-", 1)[1].split(" ", 1)[0])
    assert f"offset {last + 1} for the rest" in head
    assert len(page.text) - len(head) <= PAGE_CHARS + 1
    rest = await run_tool(
        RecallTool(), {"entry": entry, "offset": last + 1}, context(ctx, ledger)
    )
    assert f"lines {last + 1}-" in rest.text
    one, two = page.text.split("\n")[1:], rest.text.split("\n")[1:]
    assert one[0] == "tests/test_other.py::test_0 PASSED" and len(one) == last
    assert (one[-1], two[0]) == (f"tests/test_other.py::test_{last - 1} PASSED",
                                 f"tests/test_other.py::test_{last} PASSED")
    # The excerpt said which lines it showed: reading from there shows them again.
    first = done.text.split("--- entry ", 2)[1]
    line = int(first.split("[lines ", 1)[1].split("-", 1)[0])
    there = await run_tool(RecallTool(), {"entry": entry, "offset": line}, context(ctx, ledger))
    assert OUTPUT in there.text


async def test_recall_searches_the_branch_the_session_is_on(
    ctx: ToolContext, ledger: Ledger
) -> None:
    done = await run_tool(RecallTool(), {"query": "zebra stripes"}, context(ctx, ledger))
    assert "Nothing in this session's history matches" in done.text
    found = await run_tool(RecallTool(), {"query": "regex help"}, context(ctx, ledger))
    assert "did not help" in found.text and "your answer" in found.text


async def test_recall_ranks_entries_with_more_of_the_words_first(
    ctx: ToolContext, ledger: Ledger
) -> None:
    done = await run_tool(RecallTool(), {"query": "padding fix"}, context(ctx, ledger))
    first = done.text.split("--- entry ", 2)[1]
    assert "Now fix the padding." in first  # both words, before "Go on with the padding."


async def test_recall_asks_for_a_query_and_refuses_without_a_session(
    ctx: ToolContext, ledger: Ledger
) -> None:
    assert (await run_tool(RecallTool(), {"query": "the of"}, context(ctx, ledger))).is_error
    assert (await run_tool(RecallTool(), {"entry": "nope"}, context(ctx, ledger))).is_error
    assert (await run_tool(RecallTool(), {"query": "rule"}, ctx)).is_error


async def test_recall_looks_where_it_is_told(ctx: ToolContext, ledger: Ledger) -> None:
    """`in`: the user's prompts, the model's own answers and calls, or the tools' results."""
    run = context(ctx, ledger)
    prompts = await run_tool(RecallTool(), {"query": "tests", "in": "prompts"}, run)
    assert "the user's prompt" in prompts.text and "bash result" not in prompts.text
    results = await run_tool(RecallTool(), {"query": "tests", "in": "results"}, run)
    assert "bash result" in results.text and "the user's prompt" not in results.text
    answers = await run_tool(RecallTool(), {"query": "pytest", "in": "answers"}, run)
    assert "your bash call (pytest -q tests)" in answers.text
    assert (await run_tool(RecallTool(), {"query": "tests", "in": "files"}, run)).is_error


async def test_reading_an_entry_gives_its_answer_and_its_calls(
    ctx: ToolContext, ledger: Ledger
) -> None:
    """An excerpt of a call names the entry of the answer that made it: reading that entry
    shows the call too, not only the answer's text."""
    run = context(ctx, ledger)
    found = await run_tool(RecallTool(), {"query": "pytest", "in": "answers"}, run)
    entry = found.text.split("--- entry ", 2)[1].split(":", 1)[0]
    whole = (await run_tool(RecallTool(), {"entry": entry}, run)).text
    assert "Running them." in whole and "pytest -q tests" in whole


def test_recall_is_in_the_fixed_tool_list_and_never_asked_about() -> None:
    tool = next(tool for tool in default_tools() if tool.spec.name == "recall")
    assert tool.read_only and getattr(tool, "session_only", False)
    assert query_terms("The CHANGELOG, rule!") == ("changelog", "rule")


def test_a_search_is_not_searched_again() -> None:
    """A recall call's own query, the answer that made it ("let me look up ...") and its
    result are not history: a second search would find the first one's words instead of
    what they found."""
    call = ToolCall("r1", "recall", {"query": "zebra"})
    entries = [
        ("e1", answer("Let me look.", call)),
        ("e2", result(call, "--- entry e0: zebra ---")),
    ]
    from agent_server.session.entries import MessageEntry

    items = recallable(MessageEntry(i, None, "t", m) for i, m in entries)
    assert items == []


def test_query_words_are_cut_to_their_stems() -> None:
    assert query_terms("renders quickest tests failed") == ("render", "quick", "test", "fail")
    assert query_terms("uses ran") == ("uses", "ran")  # too short a stem is left whole


async def test_a_result_is_found_by_what_it_was_for(ctx: ToolContext, tmp_path: Path) -> None:
    """An output seldom says what it was for: the turn's prompt and the answer that ran it
    do, and recall finds it by their words, before an output that only shares its own."""
    ledger = Ledger.create(tmp_path / "w.jsonl", session_id="w", workspace=str(tmp_path))
    ledger.append_message(prompt("Try the quickest patch you can see, then run the TOC tests."))
    run = ToolCall("c1", "bash", {"command": "python -m unittest tests.test_toc"})
    ledger.append_message(answer("Patched; running them.", run))
    ledger.append_message(result(run, "F.F\nFAILED (failures=2)"))
    ledger.append_message(prompt("Revert it and run everything."))
    again = ToolCall("c2", "bash", {"command": "python -m unittest"})
    ledger.append_message(answer("Reverted.", again))
    ledger.append_message(result(again, "Ran 9 tests: the test run is OK, no patch needed"))
    found = await run_tool(
        RecallTool(), {"query": "what the quick patch's test run said", "in": "results"},
        context(ctx, ledger),
    )
    first = found.text.split("--- entry ", 2)[1]
    assert "FAILED (failures=2)" in first and "turn 1" in first


@pytest.mark.parametrize(("text", "term", "found"), [
    ("it places the key", "place", 1),
    ("self._replace(key) in place", "place", 1),  # not in "_replace"
    ("raise ParseError(...) from error", "error", 2),  # "ParseError" is two words
    ("core.py:813(_parseNoCache)", "nocache", 1),
    ("core.py:813(_parseNoCache)", "parse", 1),
    ("a prefix is not a fix", "fix", 1),
    ("HTTPError", "error", 1),
    ("HTTPERROR", "error", 0),  # a run of capitals is one word
    ("def test_it() -> None:", "no", 0),  # two letters: a whole word only
    ("pytest -p no:cacheprovider", "no", 1),
    ("noSuchKey or no_such_key", "no", 2),
    ("tests/test_x.py and pytest", "py", 1),
    ("Ärger: ParseError, unerrorable", "error", 1),  # not ASCII: the loop of `find`
])
def test_a_word_matches_where_a_word_starts(text: str, term: str, found: int) -> None:
    assert occurrences(text, lower(text), term) == found


@settings(max_examples=400, deadline=None)
@example(text="AAa Ab aB", term="a")  # a capital before a small one after a capital
@example(text="b0Ab-ab0.a", term="ab")  # a capital after a digit; two letters end a word
@given(
    text=st.text(alphabet="aAbBzZ01_ .-/:\n", max_size=60),
    term=st.text(alphabet="ab0.-", min_size=1, max_size=4),
)
def test_an_ascii_text_is_searched_by_the_same_rules_as_any_text(text: str, term: str) -> None:
    """An ASCII text holding a word often is searched by a regular expression, any other by
    the loop of `find` (at_word_start's and matches_at's rules, a character at a time): they
    find the same words."""
    lowered = lower(text)
    by_loop, at = [], find(text, lowered, term)
    while at >= 0:
        by_loop.append(at)
        at = find(text, lowered, term, at + len(term))
    by_pattern = [match.start() for match in recall_tool._word_pattern(term).finditer(text)]
    assert by_pattern == by_loop
    many = (text + "\n") * 40  # often enough for word_starts to take the expression
    width = len(text) + 1
    assert word_starts(many, lower(many), term) == [
        copy * width + at for copy in range(40) for at in by_loop
    ]
    assert occurrences(many, lower(many), term) == 40 * len(by_loop)


async def test_a_decision_is_found_by_the_words_it_was_stated_with(
    ctx: ToolContext, tmp_path: Path
) -> None:
    """A decision is seldom called one: asked for "the decision about the cache", recall
    shows first the answer to "what do you propose" and the one that says what was chosen,
    before answers that say "cache" more often but decide nothing."""
    ledger = Ledger.create(tmp_path / "d.jsonl", session_id="d", workspace=str(tmp_path))
    ledger.append_message(prompt("The cache misses too often. What do you propose?"))
    ledger.append_message(answer("A bounded LRU keyed by the file's path and its mtime."))
    ledger.append_message(prompt("Look at how the cache is filled."))
    reads(ledger, 3, "How the cache is filled: the cache, its cache keys.", "cache = {{}}  # {n}")
    ledger.append_message(prompt("Anything else to keep?"))
    ledger.append_message(answer("We chose to keep the old cache file's format."))
    found = await run_tool(RecallTool(), {"query": "the decision about the cache",
                                          "in": "answers"}, context(ctx, ledger))
    first_two = "".join(found.text.split("--- entry ")[1:3])
    assert "A bounded LRU" in first_two and "We chose" in first_two


def test_an_excerpt_of_a_long_output_keeps_its_errors_and_its_end() -> None:
    """Of a long result: the stretch with the query's words, then the lines of the rest
    that report an error or a failure, then the end, where a run's verdict is."""
    lines = [f"tests/test_t.py::test_{i} PASSED" for i in range(400)]
    lines[20] = "tests/test_t.py::test_20 FAILED"
    lines[200] = "tests/test_t.py::test_zebra PASSED"
    text = "\n".join([*lines, "= 1 failed, 399 passed ="])
    shown = excerpt(text, text.lower(), ("zebra",), 1200, output=True)
    assert len(shown) < 1400
    assert "test_zebra PASSED" in shown
    assert "tests/test_t.py::test_20 FAILED" in shown
    assert shown.endswith("= 1 failed, 399 passed =")
    assert shown.index("test_zebra") < shown.index("test_20 FAILED") < shown.index("= 1 failed")
    prose = excerpt(text, text.lower(), ("zebra",), 1200)  # an answer: the stretch alone
    assert "test_zebra" in prose and "= 1 failed" not in prose


def test_an_excerpt_is_where_its_words_are_after_a_character_that_lowers_to_two() -> None:
    """"İ" lowers to two characters: the lowered text keeps it, so that the offsets of the
    words found in it are the text's."""
    text = "İstanbul " * 400 + "the zebra line\n" + "filler " * 400
    assert len(lower(text)) == len(text) and lower("ABC İ") == "abc İ"
    shown = excerpt(text, lower(text), ("zebra",), 200)
    assert "the zebra line" in shown


async def test_a_command_run_again_shows_its_other_runs(ctx: ToolContext, tmp_path: Path) -> None:
    """Words cannot say which run of a command is meant ("before the fix"): under the best
    run, the same command's other runs show the lines holding the words (holding none, the
    lines the run shown did not print), newest first, each under its turn and entry; a
    different command's runs do not, even one that a title, cut at 80 characters, cannot tell
    apart."""
    ledger = Ledger.create(tmp_path / "r.jsonl", session_id="r", workspace=str(tmp_path))
    rule = "(quota - (used + 1)) > 0 and (owner == admin or level >= 3) and region != 'x'"
    command = {"command": f"python time_rule.py {rule!r}"}
    outputs = ["parsed in 2.1 s\ncache hits/misses: [0, 0]", "parsed in 2.0 s\nno change",
               "parsed in 0.01 s\ncache hits/misses: [309, 1721]"]
    for turn, (ask, output) in enumerate(zip(
        ("Time the rule.", "Try inlining, time it again.", "Now the fix: time the rule."),
        outputs, strict=True,
    )):
        ledger.append_message(prompt(ask))
        if turn == 0:
            other = ToolCall("d", "bash", {"command": f"python time_rule.py {rule!r} --twice"})
            ledger.append_message(answer("The other script first.", other))
            ledger.append_message(result(other, "cache hits/misses: [7, 7]"))
        call = ToolCall(f"c{turn}", "bash", command)
        ledger.append_message(answer("Timing it.", call))
        ledger.append_message(result(call, output))
    reads(ledger, MAX_EXCERPTS - 1, "Reading how the fix caches.",  # more of the words
          "# the cache statistics after the fix ({n})")
    found = await run_tool(
        RecallTool(), {"query": "the cache statistics after the fix", "in": "results"},
        context(ctx, ledger),
    )
    first = next(part for part in found.text.split("--- entry ") if "[309, 1721]" in part)
    assert first.split("\n", 1)[0].endswith("turn 3 ---")
    runs = first.split("[the same call's other runs, newest first]\n", 1)[1]
    assert runs.startswith("turn 2, entry ") and "  1: parsed in 2.0 s\n  2: no change" in runs
    assert "\nturn 1, entry " in runs and "  2: cache hits/misses: [0, 0]" in runs
    assert "parsed in 2.1 s" not in runs  # a line without the words, where one has them
    assert "[7, 7]" not in runs  # another command


async def test_a_command_s_other_runs_without_the_words_show_how_they_differ(
    ctx: ToolContext, tmp_path: Path
) -> None:
    """A reproduction prints none of the words a query for it has ("what the reproduction
    printed before the fix"): its other runs are shown by the lines the run shown did not
    print, so the run before the fix is in reach however the search ranked it; a run that
    printed the same adds nothing."""
    ledger = Ledger.create(tmp_path / "d.jsonl", session_id="d", workspace=str(tmp_path))
    command = {"command": "python repro.py"}
    outputs = ["alice in cache after del: False\nget after del: session-1\nlinks left: 1000",
               "alice in cache after del: False\nget after del: None\nlinks left: 0",
               "alice in cache after del: False\nget after del: None\nlinks left: 0"]
    for turn, (ask, output) in enumerate(zip(
        ("Reproduce it in repro.py and run it.", "Then fix it.", "Run it once more."),
        outputs, strict=True,
    )):
        ledger.append_message(prompt(ask))
        call = ToolCall(f"c{turn}", "bash", command)
        ledger.append_message(answer("Running it.", call))
        ledger.append_message(result(call, output))
    found = await run_tool(
        RecallTool(), {"query": "what the reproduction printed before the fix", "in": "results"},
        context(ctx, ledger),
    )
    fixed = next(part for part in found.text.split("--- entry ") if "turn 2 ---" in part)
    runs = fixed.split("[the same call's other runs, newest first]\n", 1)[1]
    assert runs.startswith("turn 1, entry ")
    assert "  2: get after del: session-1\n  3: links left: 1000" in runs
    assert "alice in cache" not in runs  # printed the same by the run shown


def test_an_excerpt_of_a_long_output_is_where_its_rarer_words_gather() -> None:
    """Every line of a verbose test run says "test"; a few say "fail": the stretch shown is
    where the failures are, not the first line that happens to hold both words."""
    lines = [f"test_{i} (test_apis.T.test_{i}) ... ok" for i in range(600)]
    lines[40] = "test_bad_format (test_apis.T.test_bad_format)\nTest failure on bad format ... ok"
    for at in range(300, 304):
        lines[at] = f"test_toc_{at} (test_legacy.T.test_toc_{at}) ... FAIL"
    lines += ["-" * 70, "Ran 600 tests", "FAILED (failures=4)"]
    text = "\n".join(lines)
    shown = excerpt(text, lower(text), ("test", "fail"), FIRST_EXCERPT_CHARS, output=True)
    stretch = shown.split("\n", 1)[1].split("...\n", 1)[0]
    assert all(f"test_toc_{at} (test_legacy.T.test_toc_{at}) ... FAIL" in stretch
               for at in range(300, 304))
    assert "test_bad_format" not in stretch


def test_of_lines_holding_as_many_words_those_reporting_a_failure_come_first() -> None:
    """Outside the stretch, the lines with the most of the words are listed within a budget;
    of lines holding as many, the ones that report an error or a failure come first."""
    lines = [f"row {i}" for i in range(500)]
    lines[250] = "the zebra cache, at its failure test"  # the stretch: four words
    for at in range(10, 30):
        lines[at] = f"a test of the failover {at} ... ok"  # two words, no failure
    for at in range(40, 50):
        lines[at] = f"error: disk quota {at}"  # failures, none of the words
    lines[400] = "FAIL: test_padding"  # two words, a failure
    text = "\n".join(lines)
    shown = excerpt(text, lower(text), ("zebra", "cache", "test", "fail"), 900, output=True)
    assert "401: FAIL: test_padding" in shown


def test_a_line_or_two_between_the_stretch_and_the_end_are_shown() -> None:
    """A stretch that ends a line or two above the end an excerpt shows is shown on to the
    end, not cut for the gap: a run's verdict comes with what is just above it."""
    lines = [f"row {i}: " + "-" * 40 for i in range(300)]
    lines[290] = "the zebra line"
    lines[295] = "where 4 = ParseError('Key \"a\" already exists. at line 4 col 0').line"
    text = "\n".join(lines)
    shown = excerpt(text, lower(text), ("zebra",), 900, output=True)
    assert "the zebra line" in shown and "where 4 = ParseError" in shown
    assert shown.count("[lines ") == 1 and shown.endswith("row 299: " + "-" * 40)


async def test_the_best_entrys_room_goes_to_the_next_when_it_is_short(
    ctx: ToolContext, tmp_path: Path
) -> None:
    """The best entry's excerpt may be the longest; when its text is short, that room goes to
    the next entry, so a long output ranked second is not cut to the others' size."""
    ledger = Ledger.create(tmp_path / "m.jsonl", session_id="m", workspace=str(tmp_path))
    ledger.append_message(prompt("Run the zebra suite."))
    long_call = ToolCall("c1", "bash", {"command": "run-suite"})
    ledger.append_message(answer("Running it.", long_call))
    rows = [f"row {i} of the output" for i in range(400)]
    rows[100] = "zebra failure: one"
    rows[380] = "zebra failure: two"
    ledger.append_message(result(long_call, "\n".join(rows)))
    ledger.append_message(prompt("And the short zebra suite, the zebra failure one."))
    short_call = ToolCall("c2", "bash", {"command": "run-short zebra failure"})
    ledger.append_message(answer("Running the zebra failure one.", short_call))
    ledger.append_message(result(short_call, "zebra failure: none"))
    found = await run_tool(RecallTool(), {"query": "zebra failure", "in": "results"},
                           context(ctx, ledger))
    parts = found.text.split("--- entry ")
    assert "zebra failure: none" in parts[1]  # the best: short, shown whole
    assert "zebra failure: one" in parts[2] and "zebra failure: two" in parts[2]
    assert EXCERPT_CHARS < len(parts[2]) <= FIRST_EXCERPT_CHARS + 200


def test_the_note_of_a_cut_is_not_a_line_holding_the_words() -> None:
    """A cut output's first line says where the whole is saved (a path under ~/.cache, and
    words like "errors" and "output"): an excerpt does not list it as a line that matches."""
    lines = [f"row {i}" for i in range(400)]
    lines[0] = "[Output truncated: 9 lines were cut. Full output saved to /home/u/.cache/x.txt]"
    lines[200] = "the zebra cache"
    lines[300] = "cache again"
    text = "\n".join(lines)
    shown = excerpt(text, lower(text), ("zebra", "cache"), 600, output=True)
    assert "301: cache again" in shown and "1: [Output truncated" not in shown


async def test_a_result_is_found_by_the_command_that_printed_it(
    ctx: ToolContext, tmp_path: Path
) -> None:
    """A report seldom names the script that printed it: its call does, and recall finds the
    output by the command (the run to compare with is found by what was run)."""
    ledger = Ledger.create(tmp_path / "c.jsonl", session_id="c", workspace=str(tmp_path))
    ledger.append_message(prompt("Run the lint team's tool over the corpus."))
    report = ToolCall("c1", "bash", {"command": "python tools/error_report.py corpus"})
    ledger.append_message(answer("Running it.", report))
    ledger.append_message(result(report, "483 documents: 454 with a position, 9 without"))
    reads(ledger, MAX_EXCERPTS, "Reading the notes.",  # the query's words but the command's
          "the report's totals, per corpus ({n})")
    found = await run_tool(
        RecallTool(), {"query": "the report's totals error_report.py", "in": "results"},
        context(ctx, ledger),
    )
    assert "483 documents" in found.text.split("--- entry ", 2)[1]


async def test_a_cut_result_is_searched_and_read_whole(
    ctx: ToolContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command's output cut short is saved whole: recall searches, shows and reads the
    whole (under its own line numbers), not the part the result showed; a result naming a
    file outside the session's spill directory, or one too large, is searched as it is."""
    lines = [f"tests/test_{n}.py::test_case PASSED" for n in range(3000)]
    lines[1500] = "  +  where 4 = Key('a').line, already at line 4 col 0"
    (ctx.workspace / "log.txt").write_text("\n".join(lines) + "\n")
    run = ToolCall("c1", "bash", {"command": "cat log.txt"})
    ran = await run_tool(BashTool(), run.arguments, ctx)
    assert "where 4 =" not in ran.text and "Full output saved to" in ran.text
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("the zebra line, never to be read\n")
    ledger = Ledger.create(tmp_path / "w.jsonl", session_id="w", workspace=str(tmp_path))
    ledger.append_message(prompt("Run the whole suite."))
    ledger.append_message(answer("Running it.", run))
    ledger.append_message(result(run, ran.text))
    forged = ToolCall("c2", "bash", {"command": "true"})
    ledger.append_message(answer("And this.", forged))
    ledger.append_message(result(forged, f"[Output truncated: 1 line. Full output saved to "
                                         f"{outside}; read it with the read tool]"))
    recall = context(ctx, ledger)
    found = await run_tool(RecallTool(), {"query": "where key already"}, recall)
    first = found.text.split("--- entry ", 2)[1]
    assert "its whole output" in first.split("\n", 1)[0]
    stretch = re.search(r"\[lines (\d+)-(\d+)\]", first)
    assert "where 4 = Key('a')" in first and stretch is not None
    assert int(stretch[1]) <= 1501 <= int(stretch[2])  # its line in the whole output
    entry = first.split(":", 1)[0]
    page = await run_tool(RecallTool(), {"entry": entry, "offset": 1500}, recall)
    assert page.text.split("\n", 2)[1] == "tests/test_1499.py::test_case PASSED"
    assert "of 3001" in page.text.split("\n", 1)[0]
    missed = await run_tool(RecallTool(), {"query": "zebra"}, recall)
    assert "never to be read" not in missed.text
    monkeypatch.setattr(recall_tool, "SAVED_BYTES", len(ran.text))
    shown = await run_tool(RecallTool(), {"query": "where key already"}, recall)
    assert "where 4 =" not in shown.text and "its whole output" not in shown.text
