"""The recall benchmark's pieces: its figures from the simulator's records, the real-code
scripts' honesty checks, the real-code sessions rehearsed against their pinned sources, and
the product's compaction as a compactor of compaction-conformance-kit."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest

from agent_server.cli import _suite_options, build_parser
from agent_server.llm.models import BUILTIN_MODELS
from agent_server.sim.knowledge import FactCheck
from agent_server.sim.records import RequestRecord, TokenCounts
from agent_server.sim.responder import plan_reply
from benchmarks import peers, recall
from benchmarks.real_code import RECIPES, RealWorkload, workloads
from benchmarks.real_code.rehearse import Outputs, rehearse
from benchmarks.real_code.script import Script, ScriptError, call

MODEL = next(m for m in BUILTIN_MODELS if m.id == "sim-small")


def record(source: str, *checks: FactCheck, prompt: int = 1000, status: int = 200
           ) -> RequestRecord:
    tokens = TokenCounts(input=prompt, cache_read=0, cache_write_5m=0, cache_write_1h=0,
                         output=10)
    return RequestRecord(time=0.0, method="POST", path="/v1/messages",
                         api="anthropic-messages", status=status, request={},
                         request_id="r", tokens=tokens, source=source, knowledge=checks)


def test_recall_figures_come_from_the_knowledge_checks() -> None:
    records = [
        record("scenario:0:0"),
        record("recovery:1:0:a", FactCheck("a", "file", "1:0", "fetch"), prompt=5000),
        record("scenario:1:0", FactCheck("a", "file", "1:0", "recovered"),
               FactCheck("r", "rule", "1:0", "found")),
        record("violation:2:0:f", FactCheck("f", "failed", "2:0", "violated")),
        record("scenario:2:0", FactCheck("f", "failed", "2:0", "carried"),
               FactCheck("o", "output", "2:0", "lost")),
        record("scenario:2:1", FactCheck("o", "output", "2:0", "lost")),  # counted once
        record("scenario:2:1", status=400),  # a refused request is no step
        record("summary"),
    ]
    figures = peers.recall_of(records, MODEL)
    assert (figures.needed, figures.found) == (4, 1)
    assert figures.recoveries == 1 and figures.recovery_tokens == 5010
    assert figures.recovery_cost == pytest.approx((5000 * 3 + 10 * 15) / 1e6)
    assert figures.violations == {"rule": 0, "request": 0, "decision": 0, "failed": 1,
                                  "lost": 1}
    assert figures.completed == 4  # 0:0, 1:0, 2:0, 2:1


def tree(tmp_path: Path) -> Path:
    root = tmp_path / "lib"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "core.py").write_text(
        "def parse_header(raw):\n    if not raw.startswith(MAGIC_BYTES_V2):\n"
        "        raise HeaderError('bad magic in header')\n    return raw\n")
    (root / "pkg" / "copy.py").write_text("x = 1\n    return raw\n")
    return root


def test_a_script_refuses_what_would_not_measure_honestly(tmp_path: Path) -> None:
    s = Script("t", tree(tmp_path))
    fact = s.file_fact("header", "pkg/core.py", "def parse_header", 4, "the parser")
    # The short line and the line another file holds are not distinguishing.
    assert s.data()["facts"][0]["text"] == [
        "def parse_header(raw):", "    if not raw.startswith(MAGIC_BYTES_V2):",
        "        raise HeaderError('bad magic in header')"]
    with pytest.raises(ScriptError, match="not once"):
        s.edit("pkg/core.py", "raw", "data")
    s.turn("Read it.", {"tools": [s.read("pkg/core.py")]},
           {"needs": [fact], "text": "It checks MAGIC_BYTES_V2 first."})
    s.said_fact("rule", "rule", "never touch copy.py", "the rule", otherwise_text="x")
    with pytest.raises(ScriptError, match="one prompt only"):
        s.data()
    s.turn("And never touch copy.py, please.", {"text": "Understood."})
    assert s.scenario().facts["rule"].kind == "rule"
    s.output_fact("out", ["bad magic in header"], call("bash", command="true"), "the error")
    s.data()
    s.turn("Run it.", {"tools": [call("bash", command="grep 'bad magic in header' pkg")]},
           {"text": "Done."})
    with pytest.raises(ScriptError, match="scripted call's arguments"):
        s.data()  # the command itself would hold the value the output is to show


def test_a_value_said_in_a_scripted_text_is_no_output_fact(tmp_path: Path) -> None:
    s = Script("t", tree(tmp_path))
    s.output_fact("out", ["MAGIC_BYTES_V2"], call("bash", command="true"), "the name")
    s.turn("Read it.", {"text": "It checks MAGIC_BYTES_V2 first."})
    with pytest.raises(ScriptError, match="in a prompt or a scripted text"):
        s.data()


def test_an_edit_changes_what_later_facts_read(tmp_path: Path) -> None:
    s = Script("t", tree(tmp_path))
    s.edit("pkg/core.py", "MAGIC_BYTES_V2", "MAGIC_BYTES_V3")
    s.file_fact("after", "pkg/core.py", "def parse_header", 3, "the parser, edited")
    assert "    if not raw.startswith(MAGIC_BYTES_V3):" in s.data()["facts"][0]["text"]
    assert (tmp_path / "lib" / "pkg" / "core.py").read_text().count("V2") == 1  # tree intact


def test_a_file_fact_needed_after_an_edit_of_its_lines_is_found_stale(tmp_path: Path) -> None:
    """The rehearsal checks each file fact against the file as it stands when a step needs
    it: a fact declared before an edit of its lines could never be fetched again."""
    s = Script("t", tree(tmp_path))
    s.file_fact("header", "pkg/core.py", "def parse_header", 4, "the parser as it was")
    s.turn("Read the parser.", {"tools": [s.read("pkg/core.py")]},
           {"needs": ["header"], "text": "It checks the magic bytes."})
    s.turn("Bump the magic.", {"tools": [s.edit("pkg/core.py", "MAGIC_BYTES_V2",
                                                "MAGIC_BYTES_V3")]},
           {"needs": ["header"], "text": "Bumped."})
    s.file_fact("header-now", "pkg/core.py", "def parse_header", 4, "the parser as it is")
    s.turn("Show it again.", {"needs": ["header-now"], "text": "Here it is."})
    workload = RealWorkload("t", "test", RECIPES[0].source, s.scenario(), s.root)
    problems = rehearse(workload).problems
    assert len(problems) == 1 and problems[0].startswith("turn 1 step 1: header:")
    assert "MAGIC_BYTES_V2" in problems[0]


def test_an_output_needed_after_the_code_changed_is_found_unrederivable(tmp_path: Path
                                                                        ) -> None:
    """An output fact is checked against every output its command printed so far, and its
    command is run again where a step needs it: a need it no longer prints is one only the
    session's history can meet; a text the command never printed is the script's error."""
    s = Script("t", tree(tmp_path))
    show = call("bash", command="sed -n 2p pkg/core.py | tr a-z A-Z")
    s.output_fact("count", ["IF NOT RAW.STARTSWITH(MAGIC_BYTES_V3)"], show,
                  "what the check said after the bump")
    s.output_fact("never", ["NEVER_PRINTED_ANYWHERE"], show, "a text it never prints")
    s.turn("Bump the magic, then show the check in capitals.",
           {"tools": [s.edit("pkg/core.py", "MAGIC_BYTES_V2", "MAGIC_BYTES_V3"), show]},
           {"needs": ["count"], "text": "Bumped."})
    s.turn("Put it back.", {"tools": [s.edit("pkg/core.py", "MAGIC_BYTES_V3",
                                             "MAGIC_BYTES_V2")]},
           {"needs": ["count"], "text": "Back; it said V3 before."})
    s.turn("And the other?", {"needs": ["never"], "text": "Nothing."})
    workload = RealWorkload("t", "test", RECIPES[0].source, s.scenario(), s.root)
    rehearsal = rehearse(workload)
    assert rehearsal.unrederivable == ["turn 1 step 1: count"]
    assert len(rehearsal.problems) == 1
    assert rehearsal.problems[0].startswith("turn 2 step 0: never:")


def test_a_command_is_run_again_only_on_content_it_has_not_run_on(tmp_path: Path) -> None:
    """The rehearsal reuses what a command printed on the same workspace content (its facts
    are texts that do not change between runs): an edit reverted runs nothing again."""
    workspace, runs = tmp_path / "workspace", tmp_path / "runs"
    workspace.mkdir()
    (workspace / "a.txt").write_text("one")
    outputs = Outputs()
    command = f"echo run >> {shlex.quote(str(runs))}; cat a.txt"
    assert [outputs.again(command, workspace) for _ in range(2)] == ["one", "one"]
    (workspace / "a.txt").write_text("two")
    assert outputs.again(command, workspace) == "two"
    (workspace / "a.txt").write_text("one")
    (workspace / "__pycache__").mkdir()  # a cache a command writes is not the content
    (workspace / "__pycache__" / "a.pyc").write_bytes(b"x")
    assert outputs.again(command, workspace) == "one"
    assert runs.read_text().split() == ["run", "run"]


async def test_restore_files_reaches_the_summary_a_compaction_writes(tmp_path: Path) -> None:
    """The variant as a session runs it: its block is in the compaction's summary (a swap of
    the summaries the compaction does not write with left the variant a copy of the default)."""
    from agent_server.session.entries import CompactionEntry
    from agent_server.session.ledger import Ledger
    from benchmarks.strategies import RestoreRecentFiles
    from tests.agent.test_context_manager import Provider, fill, make_manager
    from tests.session.builders import user

    for turn in range(8):
        (tmp_path / f"f{turn}.py").write_text(f"value_{turn} = {turn}\n")
    with Ledger.create(tmp_path / "s.jsonl", session_id="s", workspace=str(tmp_path),
                       fsync="never") as ledger:
        manager = make_manager(ledger, Provider(), policy=RestoreRecentFiles())
        manager.begin_turn("t1")
        fill(ledger, 8)  # reads of f0.py ... f7.py, past sim-small's threshold
        ledger.append_message(user("next"))
        await manager.prepare()
        [entry] = [e for e in ledger.tree.entries if isinstance(e, CompactionEntry)]
    assert entry.summary.startswith("SUMMARY 1")
    assert "## Files read before this point, as they are now" in entry.summary
    assert "value_5 = 5" in entry.summary  # the latest read of what was summarised


def test_the_recall_command_refuses_unknown_names(tmp_path: Path) -> None:
    assert recall.main(clients=["nobody"], out_dir=tmp_path) == 2
    assert recall.main(names=["no-such-session"], out_dir=tmp_path) == 2
    assert recall.main(summarisers=["creative"], out_dir=tmp_path) == 2
    assert recall.main(strategy_names=["no-such-strategy"], out_dir=tmp_path) == 2
    args = build_parser().parse_args(["bench", "recall", "--quick", "--summarisers", "lossy",
                                      "--sessions", "tabulate-bugfix"])
    assert args.suite == "recall" and args.quick and args.summarisers == "lossy"


def test_the_omniscient_model_answers_every_step_as_scripted() -> None:
    """`bench recall --omniscient`: the same scenario with no step needing anything, so the
    step a knowing model would detour from (the file it no longer has) is answered as is."""
    from tests.sim.test_knowledge import first_turn, scenario, transcript, user

    knowing = scenario()
    knows_all = recall.omniscient(knowing)
    assert knows_all.facts == knowing.facts
    assert [[s.needs for s in t.steps] for t in knows_all.turns] == [[(), ()], [(), ()]]
    assert [[s.tools for s in t.steps] for t in knows_all.turns] == [
        [s.tools for s in t.steps] for t in knowing.turns]
    asked = transcript(*first_turn("(the file was too large to show)"),
                       user("Fix the magic check."))
    assert plan_reply(asked, knowing, id_prefix="toolu").source == "recovery:1:0:header"
    reply = plan_reply(asked, knows_all, id_prefix="toolu")
    assert (reply.source, reply.knowledge) == ("scenario:1:0", ())
    args = build_parser().parse_args(["bench", "recall", "--omniscient"])
    assert _suite_options(args) == {"quick": False, "knows_all": True, "json_path": None}


@pytest.mark.slow
@pytest.mark.parametrize("name", [recipe.name for recipe in RECIPES])
def test_each_real_code_session_holds_against_its_pinned_source(name: str) -> None:
    """The sdist is fetched from PyPI (pinned by hash, cached); every scripted edit applies
    and every output fact is in what its command printed, run by no client at all."""
    (workload,) = workloads((name,))
    assert workload.scenario.facts and len(workload.scenario.turns) >= 15
    kinds = {fact.kind for fact in workload.scenario.facts.values()}
    assert {"file", "output", "rule", "failed", "request"} <= kinds
    rehearsal = rehearse(workload)
    assert rehearsal.problems == []
    # Each session needs, late, an output its command no longer prints (an error the fix or
    # a revert made go away): only the session's history holds it (issue 45, item 4).
    assert rehearsal.unrederivable, "no need that only the history can meet"


@pytest.mark.slow
def test_each_preparation_has_a_tree_of_its_own(tmp_path: Path) -> None:
    """Parallel runs (or another checkout's) prepare the same session: neither empties the
    tree the other copies its workspaces from."""
    (first,) = workloads(("tabulate-bugfix",))
    files = sorted(p.relative_to(first.tree) for p in first.tree.rglob("*"))
    (second,) = workloads(("tabulate-bugfix",), trees=tmp_path / "trees")
    assert second.tree != first.tree and second.tree.parent == tmp_path / "trees"
    assert sorted(p.relative_to(first.tree) for p in first.tree.rglob("*")) == files
    first.write(tmp_path / "workspace")
    assert (tmp_path / "workspace" / "tabulate" / "__init__.py").is_file()


@pytest.mark.slow
def test_the_products_compaction_is_a_compactor_of_the_kit() -> None:
    kit: Any = pytest.importorskip("compaction_kit")
    from benchmarks.conformance import ProductCompactor

    session = kit.build_seeded_session()
    compactor = ProductCompactor("faithful")
    try:
        run = kit.run_conformance(session, compactor, rounds=2)
        with pytest.raises(ValueError, match="previous round"):
            compactor.compact([kit.Turn("system", "something else")], round_num=3)
    finally:
        compactor.close()
    first, second = (r.context.text for r in run.rounds)
    assert first.startswith("[User]: The conversation history before this point was compacted")
    assert "## Goal" in first and first != second
    # The product's cut point keeps the last two turns verbatim: the kit's trailing filler.
    assert "[Assistant]: Acknowledged. Continuing with the plan." in first
    # Compacting again with nothing new is the product's no-op: the context stays as it was.
    literal = ProductCompactor("lossy", between_rounds=0)
    try:
        again = kit.run_conformance(session, literal, rounds=2)
    finally:
        literal.close()
    assert again.rounds[0].context.text == again.rounds[1].context.text
    assert "## Files read" in again.rounds[0].context.text
    assert "## Constraints" not in again.rounds[0].context.text  # the lossy summariser


def test_restore_files_attaches_the_latest_reads_of_what_leaves_the_context(
    tmp_path: Path,
) -> None:
    """The restore-files variant (issue 26, item 5): the files read in the summarised part,
    most recent first, not read again in the kept part, each the lines of its latest read as
    they are now, within the budget."""
    from agent_server.context.cut_point import CutPoint
    from benchmarks.strategies import RESTORE_FILES, RestoreRecentFiles
    from tests.context.builders import entries_of
    from tests.session.builders import assistant, call, result, user

    for name in ("a.py", "b.py", "kept.py", *(f"f{i}.py" for i in range(6))):
        (tmp_path / name).write_text("".join(f"{name} line {i}\n" for i in range(1, 101)))
    reads = [assistant("", call(f"c{i}", path=p, **extra)) for i, (p, extra) in enumerate([
        ("a.py", {}), ("b.py", {"offset": 10, "limit": 5}), ("kept.py", {}),
        ("../outside.py", {}), ("missing.py", {}),
    ])]
    summarised = entries_of(user("go"), *reads)
    kept = entries_of(assistant("", call("k", path="kept.py")), result("k", "x"), start=10)
    cut = CutPoint(10, "m10", None, tuple(summarised), (), tuple(kept), 0, 0, None)
    block = RestoreRecentFiles(tmp_path).restored(cut, 50_000)
    assert '<file path="b.py" lines="10-14">' in block and "b.py line 14\n</file>" in block
    assert '<file path="a.py" lines="1-100">' in block
    assert block.index('path="b.py"') < block.index('path="a.py"')  # the latest read first
    assert "kept.py" not in block and "outside" not in block and "missing" not in block
    # A small budget cuts a file at a whole line.
    small = RestoreRecentFiles(tmp_path).restored(cut, 40)
    assert small.count("<file ") == 1 and small.rstrip().endswith("</file>")
    # At most RESTORE_FILES files.
    many = entries_of(user("go"), *(assistant("", call(f"d{i}", path=f"f{i}.py"))
                                    for i in range(6)))
    cut = CutPoint(10, "m10", None, tuple(many), (), (), 0, 0, None)
    assert RestoreRecentFiles(tmp_path).restored(cut, 50_000).count("<file ") == RESTORE_FILES


def figures_row(client: str, cost: float, session: str = "default") -> peers.Figures:
    recall_figures = peers.Recall(needed=10, found=7, recoveries=2, recovery_tokens=3000,
                                  recovery_cost=0.02, completed=40,
                                  violations={"rule": 1, "request": 0, "decision": 0,
                                              "failed": 2, "lost": 1})
    return peers.Figures(client=client, model="sim-small", version="1", requests=50, cost=cost,
                         cache_read_share=0.9, cache_write=1000, fixed_prefix=2000,
                         tool_results=30, tool_result_tokens=40_000, summaries=3,
                         failed_requests=0, failed_turns=0, turns=17, off_script=0,
                         seconds=1.0, notes=[], recall=recall_figures, session=session)


def test_bench_peers_and_bench_recall_show_the_same_recall_columns() -> None:
    from rich.console import Console

    from benchmarks.report import peers_table, recall_lines, recall_table

    def rendered(table: Any) -> str:
        console = Console(width=400, record=True)
        console.print(table)
        return console.export_text()

    rows = [figures_row("agent-server", 0.5), figures_row("codex", 0.8),
            figures_row("pi", 0.4)]
    as_rows, as_columns = rendered(peers_table(rows)), rendered(recall_table(rows))
    for label, _value in recall_lines():
        assert label in as_rows and " ".join(label.split()[:2]) in as_columns
    for text in ("10 / 7", "2, 3.0k, $0.0200", "1 / 0 / 0 / 2 / 1", "$0.0125"):
        assert text in as_rows and text in as_columns
    # agent-server at $0.50: 1.25x the cheapest peer (pi), 0.62x Codex on its own API.
    assert "1.25x" in as_columns and "0.62x" in as_columns
    # A variant (agent-server+NAME) is compared with the peer on its client's API.
    variant = rendered(recall_table([*rows, figures_row("agent-server+restore-files", 0.5)]))
    assert variant.count("0.62x") == 2


def test_agent_server_variants_are_compared_with_the_peers_on_their_api() -> None:
    from benchmarks.report import versus_cheapest_peer

    rows = [figures_row("agent-server-anthropic+provider", 0.3), figures_row("codex", 0.8),
            figures_row("pi", 0.4), figures_row("agent-server+provider", 0.4)]
    cheapest, same_api = versus_cheapest_peer(rows, lambda r: (r.session,))
    assert [cheapest(r) for r in rows] == ["0.75x", "2.00x", "1.00x", "1.00x"]
    assert [same_api(r) for r in rows] == ["0.75x", "-", "-", "0.50x"]
    assert peers.api_of("agent-server-anthropic+clear") == "anthropic"
    assert peers.api_of("agent-server+provider") == "openai-responses"
    assert peers.reference_client("agent-server+provider") == "agent-server"


async def test_the_provider_engine_variants_compact_on_the_providers_side(tmp_path: Path) -> None:
    anthropic = await peers._run_agent_server("agent-server-anthropic+provider", "sim-small",
                                              tmp_path, tmp_path / "scratch")
    asked = [r for r in anthropic.records
             if r.api == "anthropic-messages" and "compaction" in r.request]
    assert asked and all(r.request["compaction"]["type"] == "summarize" for r in asked)
    assert peers.figures(anthropic).summaries >= len(asked) > 0
    openai = await peers._run_agent_server("agent-server+provider", "sim-small", tmp_path,
                                           tmp_path / "scratch")
    compacted = [r for r in openai.records if r.api == "openai-responses-compact"]
    assert compacted and peers.figures(openai).summaries >= len(compacted)
    local = await peers._run_agent_server("agent-server-anthropic", "sim-small", tmp_path,
                                          tmp_path / "scratch")
    assert not any("compaction" in r.request for r in local.records
                   if r.api == "anthropic-messages")
    assert peers.figures(local).summaries > 0
