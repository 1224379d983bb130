"""CPU time `agent-server chat` spends before the user can type (issue 30).

Two figures, each the median and range of several runs, in CPU seconds (user + system of the
process, from /proc/<pid>/stat, so a loaded machine does not inflate them as it does wall
time):

- `chat --help`: the process run to its end (`resource.getrusage(RUSAGE_CHILDREN)`).
- the first prompt line: `chat` started in a pseudo-terminal, its CPU read the moment `you ›`
  appears;
- loaded: then `/usage` typed, its CPU read when the answer shows (the agent, the provider's
  SDK and the session all loaded: what a first prompt waits for); then Ctrl-D.

    .venv/bin/python -m benchmarks.chat_startup [--runs 7] [--provider anthropic|sim]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import pexpect

TICK = os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int) -> float:
    """user + system seconds of a live process (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def help_cpu(command: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([*command, "chat", "--help"], check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def first_prompt_cpu(command: list[str], provider: str, home: Path) -> tuple[float, float]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "TERM": "xterm-256color",
        "ANTHROPIC_API_KEY": "not-used",  # no call is made before the prompt
    }
    with tempfile.TemporaryDirectory() as workspace:
        child = pexpect.spawn(
            command[0],
            [*command[1:], "chat", "--provider", provider, "--sessions-dir",
             str(home / "sessions")],
            cwd=workspace, env=env, encoding="utf-8", timeout=120, dimensions=(40, 80),
        )
        child.expect("you ›")
        cpu = process_cpu(child.pid)
        child.sendline("/usage")
        child.expect("cache reads")
        loaded = process_cpu(child.pid)
        child.expect("you ›")
        child.sendeof()
        child.expect(pexpect.EOF)
        child.close()
    return cpu, loaded


def describe(values: list[float]) -> str:
    return (f"median {statistics.median(values):.2f} s "
            f"(min {min(values):.2f}, max {max(values):.2f}, {len(values)} runs)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--provider", default="anthropic")
    args = parser.parse_args()
    command = [str(Path(sys.executable).with_name("agent-server"))]
    with tempfile.TemporaryDirectory() as home:
        first_prompt_cpu(command, args.provider, Path(home))  # fill caches (bytecode, attrs)
        helps = [help_cpu(command) for _ in range(args.runs)]
        runs = [first_prompt_cpu(command, args.provider, Path(home)) for _ in range(args.runs)]
    print(f"chat --help, CPU: {describe(helps)}")
    print(f"chat --provider {args.provider} to the first prompt line, CPU: "
          f"{describe([prompt for prompt, _ in runs])}")
    print(f"  and to /usage answered (all loaded), CPU: {describe([loaded for _, loaded in runs])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
