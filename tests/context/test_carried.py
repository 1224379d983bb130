"""What a compaction carries verbatim after its summary (context/carried.py), over plain
objects: the user's own words, pins, the plan, what failed; how it is rendered, stored and
folded from compaction to compaction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_server.context.carried import (
    LONG_MESSAGE_TOKENS,
    CarriedBudgets,
    carried_budgets,
    carry,
    current_pins,
    current_plan,
    failing_line,
    failures_in,
    model_words,
    user_text,
)
from agent_server.context.cut_point import find_cut_point
from agent_server.context.estimate import estimate_text_tokens
from agent_server.context.projection import project
from agent_server.context.summary_prompt import (
    CARRIED_OPEN,
    SUMMARY_CLOSE,
    build_summary_instruction,
    build_summary_prompt,
    note_message,
    render_carried,
)
from agent_server.llm.messages import (
    AssistantMessage,
    Attachment,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from agent_server.session.entries import (
    Carried,
    CompactionEntry,
    Entry,
    Failure,
    MessageEntry,
    Pin,
    PinEntry,
    PlanEntry,
    PlanItem,
    entry_from_json,
    entry_to_json,
)
from agent_server.session.ledger import Ledger

WIDE = CarriedBudgets(user_tokens=20_000, failure_tokens=2_000)


class Path_:
    """A ledger path built by hand: message entries and others, parent-linked."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []

    def _parent(self) -> str | None:
        return self.entries[-1].id if self.entries else None

    def add(self, message: object) -> MessageEntry:
        entry = MessageEntry(f"m{len(self.entries)}", self._parent(), "", message)  # type: ignore[arg-type]
        self.entries.append(entry)
        return entry

    def prompt(self, text: str) -> MessageEntry:
        return self.add(UserMessage.of_text(text))

    def answer(self, text: str, *calls: ToolCall) -> MessageEntry:
        return self.add(AssistantMessage((TextContent(text), *calls), "toolUse" if calls else "stop"))

    def result(self, call: ToolCall, text: str, error: bool = False,
               ending: str | None = None, key: str = "ending") -> MessageEntry:
        details = {key: ending} if ending is not None else None
        return self.add(ToolResultMessage(call.id, call.name, (TextContent(text),),
                                          is_error=error, details=details))

    def pin(self, pin_id: str, text: str, action: str = "add") -> None:
        entry = PinEntry(f"p{len(self.entries)}", self._parent(), "", pin_id, action, "rule", text, "user")  # type: ignore[arg-type]
        self.entries.append(entry)

    def plan(self, *items: PlanItem) -> None:
        self.entries.append(PlanEntry(f"n{len(self.entries)}", self._parent(), "", items))

    def compact(self, carried: Carried, first_kept: str | None) -> CompactionEntry:
        entry = CompactionEntry(
            f"c{len(self.entries)}", self._parent(), "", "S", first_kept, 100, None,
            "threshold", carried=carried,
        )
        self.entries.append(entry)
        return entry

    def carry(self, budgets: CarriedBudgets = WIDE, keep: int = 0) -> Carried:
        """What a compaction keeping the last `keep` message entries carries."""
        window = [e for e in self.entries if isinstance(e, MessageEntry)]
        cut = len(window) - keep
        return carry(self.entries, window[:cut], window[cut:], budgets)


def bash(call_id: str, command: str) -> ToolCall:
    return ToolCall(call_id, "bash", {"command": command})


# --- the user's own words -------------------------------------------------------------------


def test_every_prompt_is_carried_oldest_first_and_notes_are_not() -> None:
    path = Path_()
    path.prompt("never edit CHANGELOG")
    path.answer("ok")
    path.add(note_message("externalEdit", "a.py changed"))
    path.prompt("run the tests")
    path.answer("done")
    carried = path.carry()
    assert carried.user_messages == ("never edit CHANGELOG", "run the tests")
    assert carried.user_messages_left_out == 0


def test_a_prompt_kept_verbatim_in_the_tail_is_not_repeated() -> None:
    path = Path_()
    path.prompt("first")
    path.answer("one")
    path.prompt("second")
    path.answer("two")
    assert path.carry(keep=2).user_messages == ("first",)


def test_the_newest_words_win_the_budget_and_the_rest_are_counted() -> None:
    path = Path_()
    for number in range(10):
        path.prompt(f"request {number}: " + "word " * 40)
        path.answer("ok")
    budget = estimate_text_tokens("request 9: " + "word " * 40) * 3
    carried = path.carry(CarriedBudgets(user_tokens=budget, failure_tokens=100))
    assert [text.split(":")[0] for text in carried.user_messages][-3:] == [
        "request 7", "request 8", "request 9"
    ]
    assert carried.user_messages_left_out == 10 - len(carried.user_messages)
    assert sum(estimate_text_tokens(t) for t in carried.user_messages) <= budget


def test_long_pastes_do_not_push_a_short_rule_out() -> None:
    """Issue 45: 40 prompts of about 2k tokens (pasted logs) on a 32k window left room for
    one or two of them and none of the rules given before. Now the short messages are
    carried first, and each paste as its head and tail (LONG_MESSAGE_TOKENS) in what is
    left; recall finds a paste whole."""
    path = Path_()
    path.prompt("Rule: never push to main.")
    path.answer("ok")
    for number in range(40):
        path.prompt(f"paste {number}:\n" + "ERROR worker timed out after 30s\n" * 230)
        path.answer("looked at it")
    path.prompt("Correction: the worker is in jobs/, not workers/.")
    path.answer("ok")
    budget = carried_budgets(24_576).user_tokens
    carried = path.carry(CarriedBudgets(user_tokens=budget, failure_tokens=100))
    words = carried.user_messages
    assert words[0] == "Rule: never push to main."
    assert words[-1] == "Correction: the worker is in jobs/, not workers/."
    pastes = words[1:-1]
    assert pastes and all("characters cut here" in text for text in pastes)
    assert pastes[-1].startswith("paste 39:")  # the newest pastes fill what is left
    assert carried.user_messages_left_out == 42 - len(words)
    assert sum(estimate_text_tokens(t) for t in words) <= budget
    # The newest carried message, itself a paste, keeps at most half the budget.
    path.prompt("paste 40:\n" + "ERROR worker timed out after 30s\n" * 230)
    path.answer("ok")
    again = path.carry(CarriedBudgets(user_tokens=budget, failure_tokens=100)).user_messages
    assert again[0] == "Rule: never push to main." and again[-1].startswith("paste 40:")
    assert estimate_text_tokens(again[-1]) <= max(LONG_MESSAGE_TOKENS, budget // 2)


def test_the_latest_request_is_never_dropped_however_long() -> None:
    path = Path_()
    path.prompt("an old rule")
    path.answer("ok")
    huge = "Correction: I meant the other file. " + "log line\n" * 5000 + "THE END"
    path.prompt(huge)
    path.answer("ok")
    carried = path.carry(CarriedBudgets(user_tokens=300, failure_tokens=100))
    # The short rule still fits beside the cut paste (issue 45: a paste never pushes it out).
    assert carried.user_messages[0] == "an old rule" and len(carried.user_messages) == 2
    latest = carried.user_messages[1]
    assert latest.startswith("Correction: I meant the other file.") and latest.endswith("THE END")
    assert "characters cut here" in latest
    assert sum(estimate_text_tokens(t) for t in carried.user_messages) <= 300
    assert carried.user_messages_left_out == 0


def test_what_an_at_mention_attached_is_not_the_users_words() -> None:
    message = UserMessage(
        (TextContent("<file a.py>\nprint(1)\n</file>"), TextContent("explain @a.py")),
        attachments=(Attachment("a.py", "file"),),
    )
    assert user_text(message) == "explain @a.py"


def test_a_second_compaction_folds_the_first_ones_words_with_the_prompts_since() -> None:
    path = Path_()
    path.prompt("rule: keep the API")
    path.answer("ok")
    kept = path.prompt("second")
    path.answer("two")
    first = path.carry(keep=2)
    path.compact(first, kept.id)
    path.prompt("third")
    path.answer("three")
    # the window starts at the first compaction's kept entry: "second" is in it
    entries = path.entries
    window = [e for e in entries if isinstance(e, MessageEntry)][2:]
    second = carry(entries, window[:-2], window[-2:], WIDE)
    assert second.user_messages == ("rule: keep the API", "second")


# --- what the model said ------------------------------------------------------------------------


def test_the_models_own_words_are_carried_oldest_first_without_its_calls() -> None:
    path = Path_()
    path.prompt("why does the zone drop towns at 30 minutes?")
    call = bash("c1", "python zone.py")
    path.answer("", call)  # a call alone says nothing
    path.result(call, "in zone: Bamberg")
    path.answer("The search stops at the cutoff: we fix the comparison rather than pad it.",
                ToolCall("c2", "edit", {"path": "weighted.py"}))
    path.result(ToolCall("c2", "edit", {}), "edited")
    path.answer("Fixed: both towns are in the zone.")
    carried = path.carry(CarriedBudgets(user_tokens=500, failure_tokens=100, said_tokens=500))
    assert carried.said == (
        "The search stops at the cutoff: we fix the comparison rather than pad it.",
        "Fixed: both towns are in the zone.",
    )
    assert carried.said_left_out == 0
    text = render_carried(carried)
    assert "<assistant-messages> (your own words before this point, oldest first" in text
    assert text.index("we fix the comparison") < text.index("Fixed: both towns")
    # None when the budget is none, and counted as left out.
    none = path.carry(CarriedBudgets(user_tokens=500, failure_tokens=100))
    assert none.said == () and none.said_left_out == 2


def test_the_models_newest_words_win_its_budget_and_a_long_answer_is_cut_last() -> None:
    path = Path_()
    path.prompt("go")
    path.answer("Decision: the flag is --strip-semicolon, with dashes.")
    for number in range(12):
        path.answer(f"Step {number}: " + "checked the module " * 20)
    path.answer("A long report:\n" + "row of the table\n" * 400 + "End of the report.")
    path.answer("Done.")
    budget = 300
    carried = path.carry(CarriedBudgets(user_tokens=500, failure_tokens=100, said_tokens=budget))
    said = carried.said
    assert said[-1] == "Done."
    assert sum(estimate_text_tokens(text) for text in said) <= budget
    assert carried.said_left_out == 15 - len(said)
    # The short ones go first, newest first: the long report, newer, only in what is left
    # (nothing here), so it pushes none of them out.
    assert [text.split(":")[0] for text in said[:-1]] == ["Step 9", "Step 10", "Step 11"]
    wide = path.carry(CarriedBudgets(user_tokens=500, failure_tokens=100, said_tokens=2_000))
    [report] = [text for text in wide.said if text.startswith("A long report")]
    assert "characters cut here" in report and report.endswith("End of the report.")
    assert wide.said[0] == "Decision: the flag is --strip-semicolon, with dashes."


def test_a_text_kept_in_the_tail_is_not_carried_and_a_second_compaction_folds_the_first() -> None:
    path = Path_()
    path.prompt("first")
    path.answer("We keep the public API as it is.")
    kept = path.prompt("second")
    path.answer("Two.")
    wide = CarriedBudgets(user_tokens=500, failure_tokens=100, said_tokens=500)
    first = path.carry(wide, keep=2)
    assert first.said == ("We keep the public API as it is.",)
    path.compact(first, kept.id)
    path.prompt("third")
    path.answer("Three.")
    entries = path.entries
    window = [e for e in entries if isinstance(e, MessageEntry)][2:]
    second = carry(entries, window[:-2], window[-2:], wide)
    assert second.said == ("We keep the public API as it is.", "Two.")


def test_the_models_words_are_carried_once_each_where_they_last_appear() -> None:
    path = Path_()
    path.prompt("go")
    for number in range(10):
        path.answer("Let me look.", ToolCall(f"c{number}", "ls", {}))
        path.result(ToolCall(f"c{number}", "ls", {}), "a.py")
        path.answer(f"Found {number}.")
    carried = path.carry(CarriedBudgets(user_tokens=500, failure_tokens=100, said_tokens=500))
    assert carried.said == (*(f"Found {n}." for n in range(9)), "Let me look.", "Found 9.")
    assert carried.said_left_out == 0


def test_the_words_of_a_message_that_only_looks_something_up_are_not_carried() -> None:
    """"Let me read the parser again" says what the model is about to see, not what it saw:
    a message whose calls are all reads or searches (by their tools' kinds) is left out; one
    that also changes something, or runs a command, or calls nothing, is carried."""
    kinds = {"read": "read", "ls": "read", "grep": "search", "recall": "search",
             "edit": "edit", "bash": "execute"}

    def files_of(call: ToolCall) -> tuple[str, tuple[str, ...]]:
        return kinds.get(call.name, "other"), ()

    messages = [
        UserMessage.of_text("go"),
        AssistantMessage((TextContent("That is no longer in front of me; let me look it up."),
                          ToolCall("r", "recall", {"query": "the decision"})), "toolUse"),
        AssistantMessage((TextContent("Let me read it and list the tests."),
                          ToolCall("a", "read", {}), ToolCall("b", "ls", {})), "toolUse"),
        AssistantMessage((TextContent("The bound is wrong: we restore the minor's."),
                          ToolCall("c", "read", {}), ToolCall("d", "edit", {})), "toolUse"),
        AssistantMessage((TextContent("Running the suite."), bash("e", "pytest")), "toolUse"),
        AssistantMessage((TextContent("Fixed."),), "stop"),
    ]
    assert model_words(messages, files_of) == [
        "The bound is wrong: we restore the minor's.", "Running the suite.", "Fixed."]
    assert len(model_words(messages)) == 5  # a caller that knows no kinds leaves none out


def test_model_words_joins_a_messages_texts_and_skips_the_rest() -> None:
    messages = [
        UserMessage.of_text("hi"),
        AssistantMessage((TextContent("One."), ToolCall("c", "ls", {}), TextContent("Two.")),
                         "toolUse"),
        AssistantMessage((TextContent("  "),), "stop"),
    ]
    assert model_words(messages) == ["One.\nTwo."]


# --- what failed ------------------------------------------------------------------------------


def test_a_failed_command_is_carried_with_its_failing_line_and_what_was_said_next() -> None:
    path = Path_()
    path.prompt("loosen the regex and rerun the test")
    call = bash("c1", "pytest -q test_x.py")
    path.answer("", call)
    path.result(
        call,
        "collected 1 item\nF\nE   AssertionError: assert '1,234.5' == ' 1,234.5'\n"
        "FAILED test_x.py::test_align - AssertionError\n1 failed in 0.1s\n\nExit code 1.",
        error=True,
    )
    path.answer("Loosening the regex did not help: the test fails as before. Next I read it.")
    [failure] = path.carry().failures
    assert failure.call == 'bash(command="pytest -q test_x.py")'
    assert failure.error == "FAILED test_x.py::test_align - AssertionError (Exit code 1)"
    assert failure.then.startswith("Loosening the regex did not help")


def test_an_approach_the_model_said_did_not_help_is_carried_as_failed() -> None:
    """Issue 45: the command exited 0 and "it did not help" was only in the answer; the
    approach was retried in 3 of 4 runs once a summary dropped that sentence."""
    path = Path_()
    path.prompt("raise the pool size and rerun the load test")
    edit = ToolCall("c1", "edit", {"path": "pool.py", "oldText": "10", "newText": "50"})
    run = bash("c2", "make load-test")
    path.answer("", edit)
    path.result(edit, "Edited pool.py")
    path.answer("", run)
    path.result(run, "p99 1840 ms\nExit code 0.")
    path.answer("Raising the pool size did not help: p99 is 1840 ms as before. "
                "If the cache does not help either, I'll profile.")
    [failure] = path.carry().failures
    assert failure.call == 'bash(command="make load-test")'
    assert failure.error == "Raising the pool size did not help: p99 is 1840 ms as before."
    # A plan ("if X does not help") is not a result; nor is what follows a new request.
    plan = Path_()
    plan.prompt("try the cache")
    plan.answer("", run)
    plan.result(run, "p99 900 ms\nExit code 0.")
    plan.answer("If the cache does not help, I'll profile.")
    plan.prompt("thanks")
    plan.answer("That did not help anyone.")
    assert plan.carry().failures == ()


def test_the_commands_that_worked_are_carried_once_each_newest_within_the_budget() -> None:
    """Issue 45: what worked (httpie with its session, not curl) was lost with the summary.
    Each shell command whose result was not an error is carried once, where it last ran;
    a failed one is not (it is under what failed)."""
    path = Path_()
    path.prompt("call the API")
    curl, http, again = (bash("c1", "curl -s localhost:8000/api"),
                         bash("c2", "http --session=dev :8000/api"),
                         bash("c3", "http   --session=dev :8000/api"))
    path.answer("", curl)
    path.result(curl, "401 Unauthorized\nExit code 22.", error=True)
    path.answer("", http)
    path.result(http, '{"ok": true}')
    for number in range(30):
        call = bash(f"d{number}", f"pytest -q tests/test_{number}.py")
        path.answer("", call)
        path.result(call, "1 passed")
    path.answer("", again)
    path.result(again, '{"ok": true}')
    carried = path.carry(CarriedBudgets(user_tokens=2000, failure_tokens=500, worked_tokens=60))
    assert carried.worked[-1] == "http --session=dev :8000/api"  # the latest run, once
    assert carried.worked.count("http --session=dev :8000/api") == 1
    assert not any("curl" in command for command in carried.worked)
    assert sum(estimate_text_tokens(c) + 2 for c in carried.worked) <= 60
    assert len(carried.worked) < 31  # the oldest passes left out of the budget
    assert "<worked>" in render_carried(carried) and "- http --session=dev :8000/api" in render_carried(carried)
    # Stored on the compaction, and folded into the next one.
    entry = CompactionEntry("c", None, "t", "s", None, 1, None, "threshold", carried=carried)
    assert entry_from_json(entry_to_json(entry)) == entry


def test_a_command_that_worked_is_carried_with_how_its_output_ended() -> None:
    # How a run ended (as the bash tool notes it: a verdict, a reproduction's few lines) is
    # carried beside the command: the count before a fix outlives the summary. The same
    # command with another ending is another line; one without a noted ending is the command
    # alone; a result recorded before `ending` was named gives its `lastLine`.
    path = Path_()
    path.prompt("run the suite before and after the fix")
    before, fix, after, old, older = (
        bash("c1", "pytest -q"), bash("c2", "sed -i s/a/b/ x.py"), bash("c3", "pytest -q"),
        bash("c4", "make docs"), bash("c5", "python repro.py"))
    path.answer("", before)
    path.result(before, "....\n129 passed, 2 skipped in 3.1s", ending="129 passed, 2 skipped in 3.1s")
    path.answer("", fix)
    path.result(fix, "(no output)")
    path.answer("", after)
    path.result(after, ".....\n130 passed, 2 skipped in 3.2s", ending="130 passed, 2 skipped in 3.2s")
    path.answer("", old)
    path.result(old, "built")  # a result from before results noted how they ended
    path.answer("", older)
    path.result(older, "a\nb", ending="b", key="lastLine")
    carried = path.carry(CarriedBudgets(user_tokens=500, failure_tokens=100, worked_tokens=200))
    assert carried.worked == (
        "pytest -q → 129 passed, 2 skipped in 3.1s",
        "sed -i s/a/b/ x.py",
        "pytest -q → 130 passed, 2 skipped in 3.2s",
        "make docs",
        "python repro.py → b",
    )


def test_a_short_output_is_carried_whole_under_its_command() -> None:
    # A reproduction's few lines (the bash tool's `ending`) are shown under the command,
    # indented, with their own indentation kept: what it printed before the fix, which no
    # command prints again once the fix is in.
    path = Path_()
    path.prompt("reproduce it")
    repro = bash("c1", "python zone.py")
    path.answer("", repro)
    printed = "cutoff 30:\n  in zone: Depot\n  outside: Hallstadt"
    path.result(repro, printed, ending=printed)
    carried = path.carry(CarriedBudgets(user_tokens=500, failure_tokens=100, worked_tokens=200))
    assert carried.worked == (f"python zone.py → {printed}",)
    assert ("- python zone.py → cutoff 30:\n      in zone: Depot\n      outside: Hallstadt\n"
            "</worked>") in render_carried(carried)


def test_a_run_that_differs_only_in_its_timing_is_carried_once() -> None:
    # The same quiet test run three times, "in 0.16s", "in 0.17s", "in 0.16s": one line (the
    # latest), so the budget holds the commands before it; another count is another ending.
    path = Path_()
    path.prompt("fix it and run the tests each time")
    runs = [("58 passed in 0.16s", "c1"), ("57 passed, 1 failed in 0.17s", "c2"),
            ("58 passed in 0.17s", "c3"), ("58 passed in 0.16s (0:00:01)", "c4")]
    for ending, call_id in runs:
        call = bash(call_id, "pytest -q")
        path.answer("", call)
        path.result(call, f"...\n{ending}", ending=ending)
    for call_id, seconds in (("c5", "5s"), ("c6", "10s")):  # a duration in the command counts
        call = bash(call_id, f"sleep {seconds}")
        path.answer("", call)
        path.result(call, "done", ending="done")
    carried = path.carry(CarriedBudgets(user_tokens=500, failure_tokens=100, worked_tokens=200))
    assert carried.worked == (
        "pytest -q → 57 passed, 1 failed in 0.17s",
        "pytest -q → 58 passed in 0.16s (0:00:01)",
        "sleep 5s → done",
        "sleep 10s → done",
    )


def test_calls_that_never_ran_are_not_failures_and_repeats_count_once() -> None:
    path = Path_()
    path.prompt("go")
    one, two, three = bash("c1", "make"), bash("c2", "make"), bash("c3", "rm -rf x")
    path.answer("", one, three)
    path.result(one, "error: no rule\nExit code 2.", error=True)
    path.result(three, "Not run: the turn was interrupted.", error=True)
    path.answer("", two)
    path.result(two, "error: no rule\nExit code 2.", error=True)
    path.answer("Make has no such rule.")
    failures = path.carry().failures
    assert [f.call for f in failures] == ['bash(command="make")']
    assert failures[0].then == "Make has no such rule."


def test_failures_keep_the_newest_within_their_budget() -> None:
    path = Path_()
    path.prompt("go")
    for number in range(30):
        call = bash(f"c{number}", f"attempt {number}")
        path.answer("", call)
        path.result(call, f"Error: attempt {number} failed\nExit code 1.", error=True)
    carried = path.carry(CarriedBudgets(user_tokens=1000, failure_tokens=120))
    assert carried.failures and carried.failures[-1].call == 'bash(command="attempt 29")'
    assert carried.failures_left_out == 30 - len(carried.failures)
    assert len(carried.failures) < 30


def test_failing_line_prefers_the_line_that_names_the_error() -> None:
    assert failing_line("a\nTraceback (most recent call last):\n  x\nKeyError: 'b'\nExit code 1.") == (
        "KeyError: 'b' (Exit code 1)"
    )
    assert failing_line("Could not find the text to replace in a.py.") == (
        "Could not find the text to replace in a.py."
    )
    assert failing_line("just output\nExit code 3.") == "just output (Exit code 3)"


def test_failures_in_ignores_successful_results() -> None:
    call = bash("c", "ls")
    messages = [
        AssistantMessage((call,), "toolUse"),
        ToolResultMessage("c", "bash", (TextContent("a\nb"),)),
    ]
    assert failures_in(messages) == []


# --- pins and plan ----------------------------------------------------------------------------


def test_pins_in_force_fold_the_carried_ones_with_the_entries_after() -> None:
    path = Path_()
    path.prompt("go")
    path.pin("a", "never edit CHANGELOG")
    path.pin("b", "port is 8123")
    path.answer("ok")
    carried = path.carry()
    assert [p.id for p in carried.pins] == ["a", "b"]
    path.compact(carried, None)
    path.pin("a", "never edit CHANGELOG", action="remove")
    path.pin("c", "use tabs")
    assert [p.text for p in current_pins(path.entries)] == ["port is 8123", "use tabs"]
    # from the compaction on only (what EntryTree.projection_entries holds) gives the same
    start = next(i for i, e in enumerate(path.entries) if isinstance(e, CompactionEntry))
    assert current_pins(path.entries[start:]) == current_pins(path.entries)


def test_the_latest_plan_is_carried_unless_the_tail_shows_it() -> None:
    path = Path_()
    path.prompt("plan it")
    path.plan(PlanItem("read", "completed"), PlanItem("fix", "in_progress", "high"))
    path.answer("planned")
    path.prompt("go on")
    path.answer("ok")
    assert path.carry(keep=2).plan == current_plan(path.entries)
    assert current_plan(path.entries)[1] == PlanItem("fix", "in_progress", "high")
    path.plan(PlanItem("fix", "completed"))
    path.answer("fixed")
    assert path.carry(keep=3).plan == ()  # the plan entry is after the first kept message
    path.compact(path.carry(keep=0), None)
    assert current_plan(path.entries[-1:]) == (PlanItem("fix", "completed"),)


# --- rendering, storing, asking ----------------------------------------------------------------


def test_the_block_follows_the_summary_in_the_same_text() -> None:
    path = Path_()
    path.prompt("never edit CHANGELOG")
    path.answer("ok")
    kept = path.prompt("now the README")
    path.answer("done")
    carried = path.carry(keep=2)
    path.compact(carried, kept.id)
    first = project(path.entries).messages[0]
    assert isinstance(first, UserMessage)
    head = first.content[0]
    assert isinstance(head, TextContent)
    assert head.text.index(SUMMARY_CLOSE) < head.text.index(CARRIED_OPEN)
    assert "never edit CHANGELOG" in head.text
    assert first.content[-1] == TextContent("now the README")  # the kept prompt, once


def test_render_names_each_part_and_an_empty_block_renders_nothing() -> None:
    assert render_carried(Carried()) == ""
    text = render_carried(
        Carried(
            ("a rule",), 2, (Pin("p1", "fact", "port 8123", "model"),),
            (PlanItem("fix", "in_progress", "high"),),
            (Failure('bash(command="make")', "error (Exit code 2)", "No such rule."),), 1,
        )
    )
    for part in ("2 older ones left out", "a rule", "[fact, pinned by the model] port 8123",
                 "- [in_progress] fix (high priority)", 'bash(command="make") failed',
                 "Then: No such rule.", "1 older ones left out"):
        assert part in text


def test_the_summary_request_says_what_is_carried_and_names_the_step_in_progress() -> None:
    carried = Carried(("x",), plan=(PlanItem("fix _afterpoint", "in_progress"),))
    instruction = build_summary_instruction(
        kept_messages=0, previous_summary_in_context=False, carried=carried
    )
    assert "the user's own messages and the plan" in instruction
    assert '"fix _afterpoint": name it under ### In progress' in instruction


def test_the_summary_request_names_only_the_newest_when_older_ones_are_not_carried() -> None:
    # A summariser told that every message is carried would drop an older rule the block no
    # longer holds: the note says which are carried and asks to keep the rest.
    carried = Carried(("b", "c"), 3, failures=(Failure("c", "e", "t"),), failures_left_out=0)
    instruction = build_summary_instruction(
        kept_messages=0, previous_summary_in_context=True, carried=carried
    )
    assert "carries verbatim the user's 2 newest messages and the tool calls that failed" in (
        instruction
    )
    assert "keep in the summary what the older messages asked, ruled, found and decided" in (
        instruction
    )
    whole = build_summary_instruction(
        kept_messages=0, previous_summary_in_context=True, carried=Carried(("b",))
    )
    assert "the user's own messages:" in whole and "Older ones" not in whole


def test_a_fresh_summary_prompt_shows_the_previous_carried_block() -> None:
    # The cached request has the previous block in its context; a fresh prompt must too, or a
    # message this compaction no longer carries is in nothing the summariser reads.
    previous = Carried(("Never push to main.", "Fix the parser."))
    now = Carried(("Fix the parser.", "Now the docs."), 1)
    prompt = build_summary_prompt(
        [UserMessage.of_text("Now the docs.")], previous_summary="## Goal\nfix",
        carried=now, previous_carried=previous,
    )
    assert "Never push to main." in prompt
    assert "carries verbatim the user's 2 newest messages" in prompt
    assert "Never push to main." not in build_summary_prompt(
        [UserMessage.of_text("Now the docs.")], previous_summary="## Goal\nfix", carried=now
    )


def test_carried_pins_and_plans_round_trip_and_old_compactions_still_load(tmp_path: Path) -> None:
    carried = Carried(
        ("a",), 1, (Pin("p", "rule", "r", "user"),), (PlanItem("s", "pending", "low"),),
        (Failure("c", "e", "t"),), 3, ("make test",), ("We keep the API.",), 2,
    )
    entry = CompactionEntry("c", None, "t", "S", None, 1, None, "manual", carried=carried)
    assert entry_from_json(json.loads(json.dumps(entry_to_json(entry)))) == entry
    # A block written before the model's words were carried has none.
    before = entry_to_json(CompactionEntry("c", None, "t", "S", None, 1, None, "manual",
                                           carried=Carried(("a",))))
    assert "said" not in before["carried"]
    assert entry_from_json(before).carried == Carried(("a",))
    old = entry_to_json(CompactionEntry("c", None, "t", "S", None, 1, None, "manual"))
    assert "carried" not in old and entry_from_json(old).carried is None
    with Ledger.create(tmp_path / "s.jsonl", session_id="s", workspace="/w") as ledger:
        ledger.append_message(UserMessage.of_text("hi"))
        ledger.add(PinEntry, "p1", "add", "fact", "port 8123", "model")
        ledger.add(PlanEntry, (PlanItem("s", "in_progress"),))
    with Ledger.open(tmp_path / "s.jsonl") as ledger:
        assert not ledger.load_report.issues
        assert current_pins(ledger.tree.projection_entries()) == (Pin("p1", "fact", "port 8123", "model"),)
        assert current_plan(ledger.tree.projection_entries()) == (PlanItem("s", "in_progress"),)


@pytest.mark.parametrize("bad", [{"pins": "x"}, {"plan": [{"content": "a", "status": "doing"}]},
                                 {"userMessagesLeftOut": -1}, {"said": "x"},
                                 {"said": ["a"], "saidLeftOut": True}, []])
def test_a_malformed_carried_block_is_a_format_error(bad: object) -> None:
    from agent_server.errors import LedgerFormatError

    data = entry_to_json(CompactionEntry("c", None, "t", "S", None, 1, None, "manual"))
    data["carried"] = bad
    with pytest.raises(LedgerFormatError):
        entry_from_json(data)


def test_a_malformed_list_is_reported_by_its_name() -> None:
    from agent_server.errors import LedgerFormatError

    data = entry_to_json(CompactionEntry("c", None, "t", "S", None, 1, None, "manual"))
    data["carried"] = {"said": ["a", 1]}
    with pytest.raises(LedgerFormatError, match="'said' must be a list of strings"):
        entry_from_json(data)


def test_budgets_follow_the_threshold() -> None:
    assert carried_budgets(24_576) == CarriedBudgets(
        user_tokens=2_457, failure_tokens=614, worked_tokens=614, said_tokens=614
    )
    assert carried_budgets(979_520).said_tokens == 2_000
    assert carried_budgets(979_520).user_tokens == 20_000  # Codex's cap


def test_find_cut_point_and_carry_together_keep_every_prompt_somewhere() -> None:
    path = Path_()
    for number in range(6):
        path.prompt(f"prompt {number}")
        path.answer("x" * 4000)
    cut = find_cut_point(path.entries, keep_recent_tokens=1500, keep_recent_turns=2)
    carried = carry(path.entries, (*cut.summarize, *cut.turn_prefix), cut.kept, WIDE)
    kept = [user_text(e.message) for e in cut.kept if isinstance(e.message, UserMessage)]
    assert sorted([*carried.user_messages, *kept]) == [f"prompt {n}" for n in range(6)]
