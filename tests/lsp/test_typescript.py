"""The extension's generated TypeScript is what the Python descriptions give, and the
extension's settings offer exactly the providers the server knows."""

from __future__ import annotations

import json
import re
from pathlib import Path

from agent_server import protocol
from agent_server.llm.providers import DEFAULT_PROVIDER, PROVIDERS
from agent_server.lsp import typescript

PACKAGE_JSON = Path(__file__).resolve().parents[2] / "client-vscode" / "package.json"


def test_generated_files_are_current() -> None:
    assert typescript.stale() == [], "run `make protocol` and commit the result"


def test_a_changed_description_is_caught(tmp_path: Path) -> None:
    for name, render in typescript.GENERATED.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(render().replace("anthropic", "anthropik") + "\n")
    everything = list(typescript.GENERATED)
    assert typescript.stale(tmp_path) == everything
    assert typescript.write(tmp_path) == everything
    assert typescript.stale(tmp_path) == []


def test_the_provider_setting_offers_the_registered_providers() -> None:
    setting = json.loads(PACKAGE_JSON.read_text())["contributes"]["configuration"]["properties"][
        "agentServer.provider"
    ]
    assert setting["enum"] == list(PROVIDERS)
    assert setting["enumDescriptions"] == [spec.description for spec in PROVIDERS.values()]
    assert setting["default"] == DEFAULT_PROVIDER


def test_every_method_has_its_section_in_the_protocol_doc() -> None:
    text = typescript.PROTOCOL_DOC.read_text()
    documented = set(re.findall(r"^### `(agent/[^`]+)`", text, re.MULTILINE))
    assert documented == {method.name for method in protocol.METHODS}
