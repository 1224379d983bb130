"""How long one recall search takes over a long session's history, in this process.

The history is built, not recorded: a session that ran a verbose test suite `--runs` times
(each output about 870 KB, 14,000 lines of `path::Class::test PASSED [ n%]`, two tests
failing in the first half of the runs and none after, each saved whole as recall reads it),
and 600 answers and prompts of a few hundred characters. Three queries: words a test run
holds on every line ("test case passed"), a question whose words are rare ("which test
failed before the fix"), and words that no output holds ("cache error traceback"). Each
query's time is the best of `--repeat` searches (recall.search: ranking, excerpts and a
command's other runs), in seconds.

    .venv/bin/python -m benchmarks.recall_speed [--runs 16] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from agent_server.agent.tools.base import Recallable
from agent_server.agent.tools.recall import query_terms, search

QUERIES = ("test case passed", "which test failed before the fix", "cache error traceback")
_COMMAND = ".venv/bin/python -m pytest -v tests"


def verbose_run(failing: bool, lines: int = 14_000) -> str:
    """A verbose test run's output: every line a test, two of them failing when `failing`."""
    out = []
    for i in range(lines):
        verdict = "FAILED" if failing and i in (4_321, 9_876) else "PASSED"
        out.append(f"tests/test_mod{i % 40}.py::TestThing{i % 13}::test_case_{i} "
                   f"{verdict} [{i * 100 // lines:3d}%]")
    tail = "2 failed" if failing else "0 failed"
    out.append(f"======== {tail}, {lines - (2 if failing else 0)} passed in 41.20s ========")
    return "\n".join(out)


def history(runs: int) -> list[Recallable]:
    items: list[Recallable] = []
    for turn in range(runs):
        text = verbose_run(failing=turn < runs // 2)
        items.append(Recallable(f"r{turn}", turn, "bash result", text, "results",
                                context="run the tests verbosely", command=_COMMAND))
    for n in range(600):
        items.append(Recallable(
            f"a{n}", n // 40, "answer",
            "I read the module and the failing test: the cache is filled before the "
            f"key is checked, so step {n} sees a stale value. " * 3, "answers",
            context="why does it fail"))
    return items


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.recall_speed")
    parser.add_argument("--runs", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    items = history(args.runs)
    size = sum(len(item.text) for item in items)
    print(f"{len(items)} entries, {size / 1e6:.1f} MB")
    for query in QUERIES:
        best = float("inf")
        for _ in range(args.repeat):
            start = time.perf_counter()
            search(items, query_terms(query))
            best = min(best, time.perf_counter() - start)
        print(f"{query!r:40} {best:6.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
