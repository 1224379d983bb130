"""Which definitions matter most: PageRank over the graph of files and the names they share.

A port of Aider's `RepoMap.get_ranked_tags` (`aider/repomap.py`), with networkx's PageRank as
Aider uses it (its pure-Python form: `_pagerank`). Each file is a node; a file that
references a name defined in another file gets an edge to it, weighted by

- 10x when the name was mentioned (in the chat's current message, or by the caller);
- 10x when the name is long (8 characters or more) and snake_case, kebab-case or camelCase;
- 0.1x when it starts with `_` (private), 0.1x when more than five files define it;
- 50x when the referencing file is in the chat;
- the square root of the number of references;

and a name defined but never referenced gets a small self-edge (0.1). The walk is
personalised: the files in the chat, the files mentioned, and the files whose path has a
mentioned name as one of its parts each start with weight 100 / (number of files). Each
file's rank is then spread over its out-edges, and each definition gets the rank that flows
into it; definitions are listed by that, highest first, then the files not yet listed by
their own rank, then the rest.

Unlike Aider, every set is walked in sorted order, so the result does not depend on the
process's hash seed: the same tree and the same inputs give the same map.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import PurePosixPath
from typing import TypeAlias

from agent_server.repo_map.tags import Tag

# A definition to show, or a file to list by its name alone.
Ranked: TypeAlias = Tag | str


def rank(
    tags_of: Callable[[str], Sequence[Tag]],
    chat_files: Collection[str],
    other_files: Collection[str],
    mentioned_files: Collection[str] = (),
    mentioned_idents: Collection[str] = (),
    *,
    skip_chat_definitions: bool = True,
) -> list[Ranked]:
    """The definitions and files of `chat_files` and `other_files` (paths relative to the
    root), most relevant first (module docstring). `skip_chat_definitions` leaves out the
    definitions of the files in the chat, as Aider does (their text is in the chat)."""
    import networkx as nx

    files = sorted(set(chat_files) | set(other_files))
    if not files:
        return []
    chat = set(chat_files)
    idents = set(mentioned_idents)
    defines: dict[str, set[str]] = defaultdict(set)
    references: dict[str, list[str]] = defaultdict(list)
    definitions: dict[tuple[str, str], set[Tag]] = defaultdict(set)
    personalization = _personalization(files, chat, set(mentioned_files), idents)
    for path in files:
        for tag in tags_of(path):
            if tag.kind == "def":
                defines[tag.name].add(path)
                definitions[(path, tag.name)].add(tag)
            else:
                references[tag.name].append(path)
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

    ranks = _pagerank(graph, personalization)
    flow: dict[tuple[str, str], float] = defaultdict(float)
    for source in graph.nodes:
        edges = list(graph.out_edges(source, data=True))
        total = sum(data["weight"] for _, _, data in edges)
        for _, target, data in edges:
            flow[(target, data["ident"])] += ranks.get(source, 0.0) * data["weight"] / total

    ranked: list[Ranked] = []
    for (path, ident), _score in sorted(flow.items(), key=lambda item: (item[1], item[0]),
                                        reverse=True):
        if skip_chat_definitions and path in chat:
            continue
        ranked.extend(sorted(definitions.get((path, ident), ()), key=lambda t: t.line))
    listed = {item.path for item in ranked if isinstance(item, Tag)}
    unlisted = set(other_files)
    for _score, path in sorted(((score, node) for node, score in ranks.items()), reverse=True):
        unlisted.discard(path)
        if path not in listed:
            ranked.append(path)
    ranked.extend(sorted(unlisted))
    return ranked


def _personalization(files: Iterable[str], chat: set[str], mentioned: set[str],
                     idents: set[str]) -> dict[str, float]:
    files = list(files)
    share = 100 / len(files)
    out: dict[str, float] = {}
    for path in files:
        weight = share if path in chat else 0.0
        if path in mentioned:
            weight = max(weight, share)
        pure = PurePosixPath(path)
        if {*pure.parts, pure.name, pure.stem} & idents:
            weight += share
        if weight > 0:
            out[path] = weight
    return out


def _ident_weight(ident: str, mentioned: set[str], definers: int) -> float:
    weight = 1.0
    snake = "_" in ident and any(c.isalpha() for c in ident)
    kebab = "-" in ident and any(c.isalpha() for c in ident)
    camel = any(c.isupper() for c in ident) and any(c.islower() for c in ident)
    if ident in mentioned:
        weight *= 10
    if (snake or kebab or camel) and len(ident) >= 8:
        weight *= 10
    if ident.startswith("_"):
        weight *= 0.1
    if definers > 5:
        weight *= 0.1
    return weight


def _pagerank(graph: object, personalization: dict[str, float]) -> dict[str, float]:
    """networkx's PageRank, personalised (and the dangling nodes' rank sent the same way)
    when anything personalises it; plain when that fails, as Aider retries.

    `nx.pagerank` runs on scipy; networkx keeps the same power iteration in pure Python
    (`_pagerank_python`: the same parameters and result, within its tolerance), which is used
    here so that the map needs neither numpy nor scipy."""
    from networkx.algorithms.link_analysis import pagerank_alg

    pagerank = getattr(pagerank_alg, "_pagerank_python", pagerank_alg.pagerank)
    if not graph.number_of_nodes():  # type: ignore[attr-defined]
        return {}
    known = {node: weight for node, weight in personalization.items()
             if graph.has_node(node)}  # type: ignore[attr-defined]
    try:
        if known:
            return dict(pagerank(graph, weight="weight", personalization=known, dangling=known))
        return dict(pagerank(graph, weight="weight"))
    except ZeroDivisionError:
        try:
            return dict(pagerank(graph, weight="weight"))
        except ZeroDivisionError:
            return {}
