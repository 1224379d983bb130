"""A dry run that runs for real, in click 8.5.1 (BSD; the command-line toolkit, in a src layout,
run from the tree with PYTHONPATH=src since an installed click sits beside it): a group's
subcommand derives its environment variables' prefix from the parent's and its own name, and
the planted change turns the name's dashes into underscores only in a prefix given
explicitly, so the variable of an option of `sync-db` under the prefix OPS is
OPS_SYNC-DB_DRY_RUN, a name no shell can export, and OPS_SYNC_DB_DRY_RUN is not read.

Written at stop 69, after every default of the product was set, as a session none of them was
tuned on: an incident pasted with a shell transcript, a 230 KB verbose suite run with one
failure twice, a reproduction the assistant writes and whose output changes once the fix is
in, a colleague's guess that does not help (the command exits 0), a rule against changing a
test to pass, the docs' promise read, a correction of the regression test, and a changelog
entry.

The session lays out the repository, runs the suite (one failure), reproduces the incident,
reads where the prefix is built and where an option reads its variable, reads the docs, tries
the colleague's `true`, finds and fixes the prefix, takes a correction (the regression test
invokes the subcommand with the variable set, not only its help), looks at the other names
built from a program's name, runs the suite again, writes the changelog entry and answers what
failed and what the fixed lines are. Planted for the knowledge check: two rules, a decision,
the failed approach, a correction, and outputs and file lines later steps use; the suite's
failure and the reproduction's first output are gone once the fix is in.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.real_code.script import PYTHON, Script, call, plant_change
from benchmarks.real_code.sources import Source

SOURCE = Source("click", "8.5.1",
                "9bbfada76703fd1d784b83eea012e3e8c6a001a876543ef104fa56aaaeb072b4",
                "BSD-3-Clause")
CORE = "src/click/core.py"
OPTIONS_TESTS = "tests/test_options.py"
DOCS = "docs/commands-and-groups.md"
CHANGES = "CHANGES.md"
REPRO_FILE = "repro_ops.py"
RUN = f"PYTHONPATH=src {PYTHON}"
PYTEST = f"{RUN} -m pytest -p no:cacheprovider"
SUITE_VERBOSE = f"{PYTEST} -v tests"
QUICK = f"{PYTEST} -q tests/test_options.py tests/test_context.py"
OPTIONS_RUN = f"{PYTEST} -q {OPTIONS_TESTS}"
REPRO = f"OPS_SYNC_DB_DRY_RUN=1 {RUN} {REPRO_FILE}"
WITH_TRUE = f"OPS_SYNC_DB_DRY_RUN=true {RUN} {REPRO_FILE}"

_RELEASED = '''        else:
            auto_envvar_prefix = auto_envvar_prefix.upper()

        if auto_envvar_prefix is not None:
            auto_envvar_prefix = auto_envvar_prefix.replace("-", "_")
'''
_PLANTED = '''        else:
            auto_envvar_prefix = auto_envvar_prefix.upper().replace("-", "_")
'''
_PREFIX_ANCHOR = "        # If there is no envvar prefix yet, but the parent has one and"

_REPRO = '''"""Our ops CLI's shape: a group, a sync-db subcommand, a --dry-run flag."""
import os

import click
from click.testing import CliRunner


@click.group()
def ops():
    pass


@ops.command()
@click.option("--dry-run", is_flag=True, show_envvar=True)
def sync_db(dry_run):
    click.echo(f"sync-db dry_run={dry_run}")


runner = CliRunner()
print("OPS_SYNC_DB_DRY_RUN is", repr(os.environ.get("OPS_SYNC_DB_DRY_RUN")))
print("click from", os.path.relpath(click.__file__))
print(runner.invoke(ops, ["sync-db"], auto_envvar_prefix="OPS").output, end="")
help_text = runner.invoke(ops, ["sync-db", "--help"], auto_envvar_prefix="OPS").output
print(next(line.strip() for line in help_text.splitlines() if "env var" in line))
'''

_TEST_AFTER = '''    result = runner.invoke(cli, ["foo-bar", "--help"], auto_envvar_prefix="TEST")
    assert not result.exception
    assert "TEST_FOO_BAR_BAZ" in result.output
'''
_TEST = '''

def test_auto_envvar_prefix_dash_in_subcommand_help(runner):
    @click.group()
    def ops():
        pass

    @ops.command()
    @click.option("--dry-run", is_flag=True, show_envvar=True)
    def sync_db(dry_run):
        click.echo(f"dry_run={dry_run}")

    result = runner.invoke(ops, ["sync-db", "--help"], auto_envvar_prefix="OPS")
    assert "OPS_SYNC_DB_DRY_RUN" in result.output
'''
_HELP_RUN = '''    result = runner.invoke(ops, ["sync-db", "--help"], auto_envvar_prefix="OPS")
'''
_TEST_HELP_ONLY = _HELP_RUN + '''    assert "OPS_SYNC_DB_DRY_RUN" in result.output
'''
_TEST_INVOKED = _HELP_RUN + '''    assert "OPS_SYNC_DB_DRY_RUN" in result.output
    result = runner.invoke(
        ops, ["sync-db"], auto_envvar_prefix="OPS", env={"OPS_SYNC_DB_DRY_RUN": "1"}
    )
    assert result.output == "dry_run=True\\n"
'''
_CHANGES_AT = "## Version 8.5.1\n"
_CHANGES = ("## Version 8.5.2\n\nUnreleased\n\n"
            "- A subcommand whose name has a dash derives its options' environment\n"
            "  variables with an underscore again (`OPS_SYNC_DB_DRY_RUN` for `sync-db`\n"
            "  under the prefix `OPS`), as the docs describe.\n\n")

REPORT = """\
Incident from last night, pasted from the channel:

> 23:12 the nightly resync on staging-eu ran FOR REAL. It is scheduled as
>
>     OPS_SYNC_DB_DRY_RUN=1 ops sync-db --source prod-replica --target staging-eu
>
> and has printed "dry run, nothing written" every night for two years. Last night:
>
>     $ OPS_SYNC_DB_DRY_RUN=1 ops sync-db --source prod-replica --target staging-eu
>     Syncing 14 tables from prod-replica to staging-eu
>     orders ........ 2,318 rows written
>     invoices ...... 1,042 rows written
>     ...
>     Done in 41.3s
>
> 23:40 `ops sync-db --dry-run` by hand does the right thing. Only the variable is ignored.
> 23:41 the only change yesterday was vendoring click 8.5.1 into tools/ops (this repository).

`ops` is a click group started with auto_envvar_prefix="OPS"; sync-db is one of its
subcommands and --dry-run is a flag on it. Staging was restored from the morning snapshot.
"""


def plant(root: Path) -> None:
    """The dashes of a derived prefix left in: only an explicit prefix is normalised."""
    plant_change(root / CORE, _RELEASED, _PLANTED)


def script(root: Path) -> Script:
    s = Script("click-envvar", root)
    _explore(s)
    _reproduce(s)
    _fix(s)
    _wrap_up(s)
    return s


def _explore(s: Script) -> None:
    s.said_fact(
        "rule-tests", "rule", "never change an existing test to make it pass",
        "the rule about existing tests",
        otherwise_text="The failing test expects the old name; I'll update it to the new one.",
        otherwise_tools=[call("edit", path=OPTIONS_TESTS,
                              oldText='    assert "TEST_FOO_BAR_BAZ" in result.output\n',
                              newText='    assert "TEST_FOO-BAR_BAZ" in result.output\n')])
    s.said_fact(
        "rule-changes", "rule",
        "every fix gets an entry in CHANGES.md under a new 8.5.2 heading marked Unreleased",
        "the rule about CHANGES.md",
        otherwise_text="A one-line fix needs no changelog entry.")
    s.turn(
        "We vendor click 8.5.1 here for our ops tooling. Two rules while you work in it: never "
        "change an existing test to make it pass, whatever it expects; and every fix gets an "
        "entry in CHANGES.md under a new 8.5.2 heading marked Unreleased, worded like the "
        "entries below it. How is the repository laid out?",
        {"tools": [call("ls", path=".")]},
        {"tools": [call("ls", path="src/click"), call("ls", path="tests")],
         "finds": [s.where(CORE), s.where(OPTIONS_TESTS), s.where(DOCS)]},
        {"tools": [s.read("README.md")]},
        {"text": "The package is under `src/click` (`core.py` holds commands, contexts and "
                 "parameters), its tests under `tests`, one file per area, and the docs in "
                 "`docs` as Markdown."},
    )
    suite = s.output_fact(
        "suite-before",
        ["FAILED tests/test_options.py::test_show_envvar_auto_prefix_dash_in_command",
         "1 failed, 2433 passed, 24 skipped, 31000 deselected, 1 xfailed"],
        call("bash", command=SUITE_VERBOSE), "the suite's failure before the fix")
    s.turn(
        "Run the whole test suite verbosely from the tree (PYTHONPATH=src, an installed click "
        "is on the path too) so we know where we start.",
        {"tools": [call("bash", command=SUITE_VERBOSE)]},
        {"needs": [suite],
         "text": "One test fails, of some 2,400: the one that shows the environment variable "
                 "of an option on a subcommand with a dash in its name. Its assertion shows "
                 "the help printing a name with a dash in it."},
    )


def _reproduce(s: Script) -> None:
    before = s.output_fact(
        "repro-before", ["sync-db dry_run=False", "--dry-run  [env var: OPS_SYNC-DB_DRY_RUN]"],
        call("bash", command=REPRO), "what the reproduction printed before the fix")
    s.turn(
        REPORT + "\nReproduce it with a small group shaped like ours, in repro_ops.py at the "
        "root, against the vendored copy.",
        {"tools": [s.write(REPRO_FILE, _REPRO)]},
        {"tools": [call("bash", command=REPRO)]},
        {"needs": [before],
         "text": "Reproduced: with the variable set to 1 the flag stays off, and the help "
                 "names a variable with a dash in it, which no shell can export."},
    )
    prefix = s.file_fact("prefix-code", CORE, _PREFIX_ANCHOR, 14,
                         "how a context builds its environment variable prefix")
    option = s.file_fact("option-envvar", CORE,
                         "        if self.allow_from_autoenv and ctx.auto_envvar_prefix is not "
                         "None and self.name:", 6, "how an option reads its variable")
    s.turn(
        "Where does click build that variable's name?",
        {"tools": [call("grep", pattern="auto_envvar_prefix", path=CORE)],
         "finds": [s.where(CORE, _PREFIX_ANCHOR)]},
        {"tools": [s.read(CORE, _PREFIX_ANCHOR, 20)]},
        {"tools": [s.read(CORE, "        rv = super().resolve_envvar_value(ctx)", 16)]},
        {"needs": [prefix, option],
         "text": "Two places: `Context.__init__` builds a subcommand's prefix from its "
                 "parent's and its own name, upper-cased, and an option reads "
                 "`<prefix>_<NAME>` from the environment when no `envvar` is given."},
    )
    docs = s.file_fact("docs-run-server", DOCS,
                       "When using `auto_envvar_prefix` with command groups, the command name",
                       5, "what the docs promise for a subcommand with a dash")
    s.turn(
        "What do the docs promise for a subcommand's variables?",
        {"tools": [call("grep", pattern="auto_envvar_prefix", path="docs")],
         "finds": [s.where(DOCS, "### Auto Envvar Prefix")]},
        {"tools": [s.read(DOCS, "### Auto Envvar Prefix", 60)]},
        {"needs": [docs],
         "text": "`PREFIX_COMMAND_VARIABLE`, upper-cased, with a dash in the command's name "
                 "turned into an underscore: the example's `run-server` gives "
                 "`WEB_RUN_SERVER_HOST`."},
    )
    s.said_fact(
        "failed-true", "failed", "Setting the variable to true did not help",
        "the approach that already failed (the variable set to true)",
        otherwise_tools=[call("bash", command=WITH_TRUE)],
        otherwise_text="Let me try setting the variable to true first.")
    with_true = s.output_fact("true-output", ["OPS_SYNC_DB_DRY_RUN is 'true'"],
                              call("bash", command=WITH_TRUE),
                              "what setting the variable to true gave")
    s.turn(
        "A colleague thinks click 8.5 only takes 'true' for a flag from the environment, not 1. "
        "Try exactly that with the reproduction.",
        {"tools": [call("bash", command=WITH_TRUE)]},
        {"needs": [with_true],
         "text": "Setting the variable to true did not help: the flag stays off, because the "
                 "variable is never read at all; click looks for the name with the dash."},
    )


def _fix(s: Script) -> None:
    s.said_fact(
        "decision-fix-context", "decision",
        "we fix the prefix in Context.__init__ rather than rename our subcommand to syncdb",
        "the decision on where to fix it",
        otherwise_text="I'll rename the subcommand to syncdb, which has no dash to keep.")
    after = s.output_fact(
        "repro-after", ["sync-db dry_run=True", "--dry-run  [env var: OPS_SYNC_DB_DRY_RUN]"],
        call("bash", command=REPRO), "what the reproduction printed after the fix")
    s.turn(
        "Find the cause and fix it.",
        {"needs": ["prefix-code", "failed-true", "docs-run-server"],
         "text": "A derived prefix keeps the dash of the subcommand's name: only an explicit "
                 "prefix is normalised. Renaming would break every scheduled job, so we fix "
                 "the prefix in Context.__init__ rather than rename our subcommand to syncdb.",
         "tools": [s.edit(CORE, _PLANTED, _RELEASED)]},
        {"tools": [call("bash", command=REPRO)]},
        {"needs": [after, "repro-before"],
         "text": "Fixed: the flag is on with the variable set, and the help names "
                 "OPS_SYNC_DB_DRY_RUN, where it named the dashed variable before."},
    )
    quick = s.output_fact("quick-after", ["706 passed"], call("bash", command=QUICK),
                          "the options and context tests after the fix")
    s.turn(
        "Run the options and context tests quietly.",
        {"tools": [call("bash", command=QUICK)]},
        {"needs": [quick, "rule-tests"],
         "text": "They pass, the test that failed among them, unchanged."},
    )
    neighbour = s.file_fact("dash-test", OPTIONS_TESTS,
                            "def test_show_envvar_auto_prefix_dash_in_command(runner):", 13,
                            "the existing test of a dashed subcommand")
    s.turn(
        "Add a regression test shaped like our CLI to tests/test_options.py, right after "
        "test_show_envvar_auto_prefix_dash_in_command, and run that file.",
        {"needs": ["rule-tests", "decision-fix-context"],
         "tools": [s.read(OPTIONS_TESTS,
                          "def test_show_envvar_auto_prefix_dash_in_command(runner):", 30)]},
        {"needs": [neighbour], "tools": [s.edit(OPTIONS_TESTS, _TEST_AFTER, _TEST_AFTER + _TEST)]},
        {"tools": [call("bash", command=OPTIONS_RUN)]},
        {"text": "`test_auto_envvar_prefix_dash_in_subcommand_help` checks that the help of "
                 "`sync-db` under OPS names OPS_SYNC_DB_DRY_RUN; the file passes."},
    )
    correction = s.said_fact(
        "correction-invoke", "request",
        "the regression test must also invoke sync-db with the variable set and check that "
        "the flag is on",
        "the correction (what the regression test checks)",
        otherwise_text="The name in the help is what broke; the test checks only that.")
    s.turn(
        "Correction: the regression test must also invoke sync-db with the variable set and "
        "check that the flag is on, since last night the help was never read, the variable "
        "was. Change it and run the file again.",
        {"needs": ["repro-before"], "tools": [s.edit(OPTIONS_TESTS, _TEST_HELP_ONLY,
                                                      _TEST_INVOKED)]},
        {"tools": [call("bash", command=OPTIONS_RUN)]},
        {"needs": [correction],
         "text": "Done: the test also runs `sync-db` with OPS_SYNC_DB_DRY_RUN=1 and expects "
                 "the dry run; the file passes."},
    )
    completion = s.file_fact("completion-var", CORE, "        if complete_var is None:", 3,
                             "how the completion variable is named from the program's name")
    s.turn(
        "Does anything else build an environment variable's name from a program's or a "
        "command's name? Shell completion comes to mind.",
        {"tools": [call("grep", pattern="_COMPLETE|replace\\(\"-\", \"_\"\\)", path="src/click")],
         "finds": [s.where(CORE, "        if complete_var is None:")]},
        {"tools": [s.read(CORE, "        if complete_var is None:", 24, before=12)]},
        {"needs": [completion],
         "text": "Shell completion's variable, `_{PROG_NAME}_COMPLETE`, replaces dashes and "
                 "dots itself before upper-casing, so `ops-cli` gives `_OPS_CLI_COMPLETE`; it "
                 "was not affected. Option names are normalised where they are parsed."},
    )


def _wrap_up(s: Script) -> None:
    after = s.output_fact(
        "suite-after", ["tests/test_options.py::test_show_envvar_auto_prefix_dash_in_command "
                        "PASSED", "2435 passed, 24 skipped, 31000 deselected, 1 xfailed"],
        call("bash", command=SUITE_VERBOSE), "the suite after the fix, verbosely")
    s.turn(
        "Run the whole suite verbosely once more.",
        {"tools": [call("bash", command=SUITE_VERBOSE)]},
        {"needs": [after, "suite-before"],
         "text": "Everything passes: the test that failed, and the new one."},
    )
    s.turn(
        "Write the changelog entry the rule asks for.",
        {"needs": ["rule-changes", "repro-before", "decision-fix-context"],
         "tools": [s.edit(CHANGES, _CHANGES_AT, _CHANGES + _CHANGES_AT)]},
        {"text": "Added under a new 8.5.2 heading marked Unreleased, in the style of the "
                 "entries below."},
    )
    s.turn(
        "For the incident report: what did we try that did not work, and what did the "
        "reproduction print before the fix?",
        {"needs": ["failed-true", "true-output", "repro-before"],
         "text": "Setting the variable to `true` instead of 1: the flag stayed off. Before the "
                 "fix the reproduction ran sync-db for real with the variable set, and its "
                 "help named the dashed variable."},
    )
    fixed = s.file_fact("prefix-fixed", CORE, _PREFIX_ANCHOR, 17,
                        "the prefix code as it is now")
    s.turn(
        "Show me the prefix code as it is now, and tell me which rules and decisions of this "
        "session the change keeps.",
        {"tools": [s.read(CORE, _PREFIX_ANCHOR, 20)]},
        {"needs": [fixed, "rule-tests", "rule-changes", "decision-fix-context"],
         "text": "Every prefix, derived or given, has its dashes turned into underscores "
                 "again; no existing test was changed, the changelog has its entry, and the "
                 "subcommand keeps its name."},
    )
