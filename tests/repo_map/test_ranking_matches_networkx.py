"""The ranking walks names as nodes between files (ranking.Graph); Aider builds one networkx edge
per (referencing file, defining file, name) and runs networkx's PageRank on it. Both must give
the same ranks and flows: the reference here is Aider's construction, with networkx."""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_server.repo_map import available
from agent_server.repo_map.ranking import Graph, _ident_weight, _personalization
from agent_server.repo_map.tags import FileTags, Tag, TagCache
from tests.repo_map.fixture import write_shop

pytestmark = pytest.mark.skipif(not available(), reason="the repomap extra is not installed")


def aider_scores(tags: dict[str, FileTags], chat: set[str], mentioned: set[str],
                 idents: set[str]) -> tuple[dict[str, float], dict[tuple[str, str], float]]:
    """aider/repomap.py's get_ranked_tags, up to the flows, on networkx 3.6.1."""
    import networkx as nx
    from networkx.algorithms.link_analysis.pagerank_alg import _pagerank_python

    files = sorted(tags)
    defines: dict[str, set[str]] = defaultdict(set)
    references: dict[str, list[str]] = defaultdict(list)
    for path in files:
        for tag in tags[path].definitions:
            defines[tag.name].add(path)
        for name, count in tags[path].references.items():
            references[name].extend([path] * count)
    if not references:
        references = {name: sorted(paths) for name, paths in defines.items()}
    graph = nx.MultiDiGraph()
    for ident in sorted(defines):
        if ident not in references:
            for definer in sorted(defines[ident]):
                graph.add_edge(definer, definer, weight=0.1, ident=ident)
    for ident in sorted(set(defines) & set(references)):
        weight = _ident_weight(ident, idents, len(defines[ident]))
        for referencer, count in sorted(Counter(references[ident]).items()):
            for definer in sorted(defines[ident]):
                scaled = weight * (50 if referencer in chat else 1) * math.sqrt(count)
                graph.add_edge(referencer, definer, weight=scaled, ident=ident)
    if not graph.number_of_nodes():
        return {}, {}
    personalization = _personalization(files, chat, mentioned, idents)
    known = {node: weight for node, weight in personalization.items() if graph.has_node(node)}
    if known:
        ranks = _pagerank_python(graph, weight="weight", personalization=known, dangling=known)
    else:
        ranks = _pagerank_python(graph, weight="weight")
    flow: dict[tuple[str, str], float] = defaultdict(float)
    for source in graph.nodes:
        edges = list(graph.out_edges(source, data=True))
        total = sum(data["weight"] for _, _, data in edges)
        for _, target, data in edges:
            flow[(target, data["ident"])] += ranks[source] * data["weight"] / total
    return dict(ranks), dict(flow)


def assert_same(tags: dict[str, FileTags], chat: set[str], mentioned: set[str],
                idents: set[str]) -> None:
    graph = Graph()
    graph.sync(tags.__getitem__, tags)
    ranks, flow = graph.scores(chat, mentioned, idents)
    expected_ranks, expected_flow = aider_scores(tags, chat, mentioned, idents)
    assert ranks.keys() == expected_ranks.keys()
    assert flow.keys() == expected_flow.keys()
    for node, value in expected_ranks.items():
        assert ranks[node] == pytest.approx(value, rel=1e-9, abs=1e-12)
    for key, value in expected_flow.items():
        assert flow[key] == pytest.approx(value, rel=1e-9, abs=1e-12)


def test_the_shop_ranks_as_networkx_ranks_it(tmp_path):
    files = write_shop(tmp_path)
    cache = TagCache()
    tags = {path: cache.tags(tmp_path, path) for path in files}
    assert_same(tags, set(), set(), set())
    assert_same(tags, {"shop/cli.py"}, set(), set())
    assert_same(tags, {"shop/cli.py"}, {"shop/tax.py"}, {"tax_exempt", "shop"})


NAMES = st.sampled_from(["get", "run", "_private", "compute_total", "FormatPrice", "a", "x_y",
                         "long_snake_name", "Order", "render"])
FILE_TAGS = st.builds(
    lambda path, defs, refs: FileTags.of(
        [Tag(path, line, name, "def") for line, name in enumerate(defs)]
        + [Tag(path, 0, name, "ref") for name in refs]),
    st.just(""),
    st.lists(NAMES, max_size=4),
    st.lists(NAMES, max_size=8),
)


@settings(max_examples=150, deadline=None)
@given(
    trees=st.dictionaries(st.sampled_from([f"f{i}.py" for i in range(8)]), FILE_TAGS,
                          min_size=1),
    chat=st.sets(st.sampled_from([f"f{i}.py" for i in range(8)]), max_size=2),
    mentioned=st.sets(st.sampled_from([f"f{i}.py" for i in range(8)]), max_size=2),
    idents=st.sets(NAMES, max_size=2),
)
def test_any_tree_ranks_as_networkx_ranks_it(trees, chat, mentioned, idents):
    tags = {path: FileTags(tuple(Tag(path, t.line, t.name, t.kind) for t in ft.definitions),
                           ft.referenced, ft.counts) for path, ft in trees.items()}
    assert_same(tags, chat & tags.keys(), mentioned & tags.keys(), idents)


def test_a_changed_file_changes_the_graph_as_a_new_one(tmp_path):
    files = write_shop(tmp_path)
    cache = TagCache()
    graph = Graph()
    graph.sync(lambda p: cache.tags(tmp_path, p), files)
    before = graph.rank([], files)
    path = tmp_path / "shop/pricing.py"
    path.write_text(path.read_text() + "\n\ndef refund(order):\n    return tax_exempt(order)\n")
    graph.sync(lambda p: cache.tags(tmp_path, p), files)
    fresh = Graph()
    fresh.sync(lambda p: TagCache().tags(tmp_path, p), files)
    assert graph.rank([], files) == fresh.rank([], files) != before
    graph.sync(lambda p: cache.tags(tmp_path, p), files[1:])  # a file gone
    fresh = Graph()
    fresh.sync(lambda p: TagCache().tags(tmp_path, p), files[1:])
    assert graph.rank([], files[1:]) == fresh.rank([], files[1:])
