"""README's tool install from a fresh clone: the wheel built from the repository, installed in
a venv of its own (what `pipx install .` and `uv tool install .` do), runs its `agent-server`
entry point from another folder, a one-shot chat against the built-in simulator included."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"


def run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    # stdin: nothing (a one-shot chat reads a pipe on stdin to its end, as a prompt's material)
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=900, env=env,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"{argv}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_readme_names_the_tool_installs() -> None:
    text = README.read_text(encoding="utf-8")
    for command in ("pipx install .", "uv tool install .", "uvx --from . agent-server"):
        assert command in text, command


def test_the_built_wheel_installs_and_runs(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheels),
         str(REPO)], cwd=tmp_path)
    [wheel] = wheels.glob("agent_server-*.whl")
    # A venv of its own with the wheel's dependencies from the index, as pipx makes one. The
    # suite's pip installs into it (no pip of its own to set up) and compiles nothing ahead:
    # those two took 8 of the test's 26 s alone, which grew to up to 141 s in CI.
    venv = tmp_path / "tool"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp_path)
    run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
         "--quiet", "--no-compile", str(wheel)], cwd=tmp_path)
    elsewhere = tmp_path / "project"
    elsewhere.mkdir()
    (elsewhere / "README.md").write_text("# A project\n")
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path), "COLUMNS": "80"}
    assert "chat" in run(["agent-server", "--help"], cwd=elsewhere, env=env)
    out = run(["agent-server", "chat", "--provider", "sim", "--sessions-dir",
               str(tmp_path / "sessions"), "--yes", "What is this project?"], cwd=elsewhere, env=env)
    assert "agent ›" in out and "context " in out
