"""README's tool install from a fresh clone: the wheel built from the repository, installed in
a venv of its own (what `pipx install .` and `uv tool install .` do), runs its `agent-server`
entry point from another folder, a one-shot chat against the built-in simulator included.

The venv takes the dependencies from the suite's own environment, which was installed from the
same pyproject.toml: resolving and downloading them again took 26 s alone and up to 141 s in
CI, and proved nothing the suite's own install does not. What this proves is the wheel: its
files, and its entry point."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
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
    venv = tmp_path / "tool"
    run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path)
    [site] = (venv / "lib").glob("python*/site-packages")
    # After the venv's own site-packages (where the wheel goes); a path a .pth names is not a
    # site directory, so the suite's editable install of the repository is not seen.
    (site / "suite-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    python = str(venv / "bin" / "python")
    run([python, "-m", "pip", "install", "--quiet", "--no-deps", str(wheel)], cwd=tmp_path)
    where = run([python, "-c", "import agent_server; print(agent_server.__file__)"], cwd=tmp_path)
    assert where.startswith(str(site)), where  # the wheel's copy, not the repository's
    elsewhere = tmp_path / "project"
    elsewhere.mkdir()
    (elsewhere / "README.md").write_text("# A project\n")
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path), "COLUMNS": "80"}
    assert "chat" in run(["agent-server", "--help"], cwd=elsewhere, env=env)
    out = run(["agent-server", "chat", "--provider", "sim", "--sessions-dir",
               str(tmp_path / "sessions"), "--yes", "What is this project?"], cwd=elsewhere, env=env)
    assert "agent ›" in out and "context " in out
