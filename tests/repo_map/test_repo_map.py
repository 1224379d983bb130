"""The repository map on a small multi-file fixture: what ranks first, the budget, the output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_server.repo_map import RepoMap, available
from agent_server.repo_map.ranking import rank
from agent_server.repo_map.tags import Tag, TagCache, read_tags
from agent_server.sim.tokenizer import count_tokens
from tests.repo_map.fixture import FILES, write_shop

pytestmark = pytest.mark.skipif(not available(), reason="the repomap extra is not installed")


@pytest.fixture
def shop(tmp_path: Path) -> tuple[Path, list[str]]:
    return tmp_path, write_shop(tmp_path)


def definitions(ranked: list[Tag | str]) -> list[tuple[str, str]]:
    return [(item.path, item.name) for item in ranked if isinstance(item, Tag)]


def test_python_tags_are_definitions_and_calls(shop: tuple[Path, list[str]]) -> None:
    root, _ = shop
    tags = list(read_tags(root / "shop/pricing.py", "shop/pricing.py"))
    defs = {(t.name, t.line) for t in tags if t.kind == "def"}
    refs = {t.name for t in tags if t.kind == "ref"}
    assert defs == {("apply_discount", 4), ("final_price", 9)}
    assert {"order_total", "apply_discount", "tax_exempt", "compute_tax"} <= refs
    # Imports are not references; only calls are.
    assert "Order" not in {t.name for t in tags if t.kind == "ref"}


def test_other_languages_are_read_by_the_generic_rule(shop: tuple[Path, list[str]]) -> None:
    root, _ = shop
    tags = list(read_tags(root / "web/cart.js", "web/cart.js"))
    assert {t.name for t in tags if t.kind == "def"} == {"CartView", "render", "formatPrice"}
    assert "formatPrice" in {t.name for t in tags if t.kind == "ref"}
    assert list(read_tags(root / "README.md", "README.md")) == [] or all(
        t.kind == "ref" for t in read_tags(root / "README.md", "README.md"))


def test_what_the_chat_files_use_ranks_first(shop: tuple[Path, list[str]]) -> None:
    root, files = shop
    cache = TagCache()
    chat = ["shop/cli.py"]
    ranked = definitions(rank(lambda p: cache.tags(root, p), chat,
                              [f for f in files if f not in chat]))
    # cli.py calls final_price, Order, add_item: those come before what only reports.py uses.
    assert ranked.index(("shop/pricing.py", "final_price")) < ranked.index(
        ("shop/reports.py", "monthly_report"))
    assert ranked.index(("shop/models.py", "add_item")) < ranked.index(
        ("shop/reports.py", "yearly_summary"))
    # The chat file's own definitions are left out (its text is in the chat).
    assert not [d for d in ranked if d[0] == "shop/cli.py"]
    # ... unless asked to keep them.
    kept = definitions(rank(lambda p: cache.tags(root, p), chat,
                            [f for f in files if f not in chat], skip_chat_definitions=False))
    assert ("shop/cli.py", "parse_line") in kept


def test_a_mentioned_name_ranks_first(shop: tuple[Path, list[str]]) -> None:
    root, files = shop
    cache = TagCache()
    plain = definitions(rank(lambda p: cache.tags(root, p), [], files))
    mentioned = definitions(rank(lambda p: cache.tags(root, p), [], files,
                                 mentioned_idents={"tax_exempt"}))
    exempt, tax = ("shop/tax.py", "tax_exempt"), ("shop/tax.py", "compute_tax")
    assert plain.index(tax) < plain.index(exempt)
    assert mentioned.index(exempt) < mentioned.index(tax)
    assert mentioned.index(exempt) < plain.index(exempt)


def test_the_budget_is_kept_and_a_smaller_one_shows_less(shop: tuple[Path, list[str]]) -> None:
    root, files = shop
    repo = RepoMap(root, count_tokens)
    sizes = []
    for budget in (40, 80, 160, 400):
        text = repo.render([], files, budget, strict=True)
        assert count_tokens(text) <= budget
        sizes.append(count_tokens(text))
    assert sizes == sorted(sizes)
    assert sizes[0] < sizes[-1]
    # Without `strict`, Aider's rule: up to 15% over the budget is taken.
    loose = repo.render([], files, 160)
    assert count_tokens(loose) <= 160 * 1.15


def test_the_map_shows_definitions_in_their_scopes(shop: tuple[Path, list[str]]) -> None:
    root, files = shop
    text = RepoMap(root, count_tokens).render(["shop/cli.py"], files, 400, line_numbers=True)
    assert "shop/pricing.py:" in text
    assert "shop/cli.py" not in text  # in the chat: left out
    # A method is shown under its class, with the file's own line numbers.
    lines = text.splitlines()
    order = next(i for i, line in enumerate(lines) if line.endswith("│class Order:"))
    add_item = next(i for i, line in enumerate(lines) if "│    def add_item(" in line)
    assert order < add_item
    source = FILES["shop/models.py"].splitlines()
    number, _, code = lines[add_item].partition("│")
    assert source[int(number) - 1] == code


def test_edits_are_seen(shop: tuple[Path, list[str]]) -> None:
    root, files = shop
    repo = RepoMap(root, count_tokens)
    assert "def refund(" not in repo.render([], files, 1000)
    path = root / "shop/pricing.py"
    path.write_text(path.read_text() + "\n\ndef refund(order):\n    return apply_discount("
                    "order, 100)\n")
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    assert "def refund(" in repo.render([], files, 1000)


def test_the_output_does_not_depend_on_the_hash_seed(shop: tuple[Path, list[str]]) -> None:
    root, files = shop
    script = (
        "import sys; from pathlib import Path; from agent_server.repo_map import RepoMap; "
        "from agent_server.sim.tokenizer import count_tokens; "
        "print(RepoMap(Path(sys.argv[1]), count_tokens).render(['shop/cli.py'], "
        "sys.argv[2].split(','), 300, mentioned_idents={'compute_tax'}), end='')"
    )
    outputs = set()
    for seed in ("1", "2", "3"):
        done = subprocess.run([sys.executable, "-c", script, str(root), ",".join(files)],
                              capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": seed})
        outputs.add(done.stdout)
    assert len(outputs) == 1
    assert outputs.pop().strip()
