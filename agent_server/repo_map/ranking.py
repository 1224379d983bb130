"""Which definitions matter most: PageRank over the graph of files and the names they share.

A port of Aider's `RepoMap.get_ranked_tags` (`aider/repomap.py`), with the PageRank of
networkx as Aider calls it (`_pagerank_python`: the same iteration, parameters and stopping
rule). Each file is a node; a file that references a name defined in another file gets an edge
to it, weighted by

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

Aider builds that graph with one edge per (referencing file, defining file, name): 2.2 million
edges for 11,000 files of five real projects, 30 s a map and 2.5 GB. Every edge of a name
from one referencing file carries the same weight whichever file defines it, so here a name
is a node between the files (`Graph`): the rank a file sends along a name is worked out once
and given to each file that defines it. The ranks and flows are the same (to rounding: a test
holds them to networkx's), in time and memory that grow with the references, not with their
product with the definitions. The graph is kept between maps and changed file by file
(`Graph.sync`), and the latest rankings are kept by what they were asked with.

Unlike Aider, every set is walked in sorted order, so the result does not depend on the
process's hash seed: the same tree and the same inputs give the same map.
"""

from __future__ import annotations

import math
import operator
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TypeAlias

from agent_server.repo_map.tags import FileTags, Tag

# A definition to show, or a file to list by its name alone.
Ranked: TypeAlias = Tag | str

ALPHA = 0.85  # networkx's pagerank defaults, as Aider calls it
MAX_ITERATIONS = 100
TOLERANCE = 1.0e-6
SELF_EDGE = 0.1  # a name defined and never referenced
CHAT_WEIGHT = 50
RESULTS_KEPT = 8  # rankings kept by what they were asked with


def rank(
    tags_of: Callable[[str], FileTags],
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
    graph = Graph()
    graph.sync(tags_of, set(chat_files) | set(other_files))
    return graph.rank(chat_files, other_files, mentioned_files, mentioned_idents,
                      skip_chat_definitions=skip_chat_definitions)


def ranked_key(chat_files: Collection[str], other_files: Collection[str],
               mentioned_files: Collection[str], mentioned_idents: Collection[str],
               skip_chat_definitions: bool) -> tuple[object, ...]:
    """What a ranking is asked with, as a key."""
    return (tuple(sorted(chat_files)), tuple(sorted(other_files)),
            tuple(sorted(mentioned_files)), tuple(sorted(mentioned_idents)),
            skip_chat_definitions)


@dataclass(frozen=True, slots=True)
class _Name:
    """A name with edges: the files that reference it (node indices, with the square root of
    their count) and the files that define it."""

    referencers: tuple[int, ...]
    roots: tuple[float, ...]
    definers: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class _Compiled:
    """The graph as numbers, rebuilt when a file's tags change."""

    nodes: tuple[str, ...]  # sorted
    names: tuple[str, ...]  # referenced and defined, sorted
    edges: tuple[_Name, ...]  # by names
    base_out: tuple[float, ...]  # each node's out-weight through names, unmentioned, unchatted
    self_edges: tuple[tuple[str, ...], ...]  # each node's names nobody references


class Graph:
    """Files and the names they define and reference, kept file by file."""

    def __init__(self) -> None:
        self._files: dict[str, FileTags] = {}
        self._defines: dict[str, set[str]] = {}
        self._references: dict[str, dict[str, int]] = {}
        self._by_name: dict[str, dict[str, list[Tag]]] = {}
        self.version = 0  # moves with every change of a file's tags
        self._compiled: _Compiled | None = None
        self._results: OrderedDict[tuple[object, ...], list[Ranked]] = OrderedDict()

    def sync(self, tags_of: Callable[[str], FileTags], files: Iterable[str]) -> None:
        """Make the graph that of `files`, whose tags `tags_of` gives (a file whose tags are
        the same object as before is not looked at again)."""
        wanted = set(files)
        for path in sorted(self._files.keys() - wanted):
            self._replace(path, None)
        for path in sorted(wanted):
            tags = tags_of(path)
            if self._files.get(path) is not tags:
                self._replace(path, tags)

    def _definitions(self, path: str) -> Mapping[str, list[Tag]]:
        """The file's definitions by name (worked out when first ranked)."""
        found = self._by_name.get(path)
        if found is None:
            found = {}
            for tag in self._files[path].definitions:
                found.setdefault(tag.name, []).append(tag)
            self._by_name[path] = found
        return found

    def _replace(self, path: str, tags: FileTags | None) -> None:
        self._by_name.pop(path, None)
        old = self._files.pop(path, None)
        if old is not None:
            for name in {tag.name for tag in old.definitions}:
                definers = self._defines[name]
                definers.discard(path)
                if not definers:
                    del self._defines[name]
            for name in old.referenced:
                referencers = self._references[name]
                del referencers[path]
                if not referencers:
                    del self._references[name]
        if tags is not None:
            self._files[path] = tags
            for tag in tags.definitions:
                self._defines.setdefault(tag.name, set()).add(path)
            for name, count in zip(tags.referenced, tags.counts, strict=True):
                self._references.setdefault(name, {})[path] = count
        self._compiled = None
        self._results.clear()
        self.version += 1

    def rank(
        self,
        chat_files: Collection[str],
        other_files: Collection[str],
        mentioned_files: Collection[str] = (),
        mentioned_idents: Collection[str] = (),
        *,
        skip_chat_definitions: bool = True,
    ) -> list[Ranked]:
        """`rank` on the synced files (chat_files and other_files: the files synced)."""
        key = ranked_key(chat_files, other_files, mentioned_files, mentioned_idents,
                         skip_chat_definitions)
        found = self._results.get(key)
        if found is None:
            found = self._rank(set(chat_files), other_files, set(mentioned_files),
                               set(mentioned_idents), skip_chat_definitions)
            self._results[key] = found
            while len(self._results) > RESULTS_KEPT:
                self._results.popitem(last=False)
        self._results.move_to_end(key)
        return list(found)

    def _rank(self, chat: set[str], other_files: Collection[str], mentioned_files: set[str],
              idents: set[str], skip_chat_definitions: bool) -> list[Ranked]:
        if not self._files:
            return []
        ranks, flow = self.scores(chat, mentioned_files, idents)
        ranked: list[Ranked] = []
        for (path, name), _score in sorted(flow.items(), key=lambda item: (item[1], item[0]),
                                           reverse=True):
            if skip_chat_definitions and path in chat:
                continue
            ranked.extend(self._definitions(path).get(name, ()))
        listed = {item.path for item in ranked if isinstance(item, Tag)}
        unlisted = set(other_files)
        for _score, path in sorted(((score, node) for node, score in ranks.items()),
                                   reverse=True):
            unlisted.discard(path)
            if path not in listed:
                ranked.append(path)
        ranked.extend(sorted(unlisted))
        return ranked

    def scores(self, chat: set[str], mentioned_files: set[str], idents: set[str],
               ) -> tuple[dict[str, float], dict[tuple[str, str], float]]:
        """Each file's PageRank, and the rank that flows into each (defining file, name)."""
        return _walk(self._compile(), chat, idents,
                     _personalization(sorted(self._files), chat, mentioned_files, idents))

    def _compile(self) -> _Compiled:
        if self._compiled is not None:
            return self._compiled
        # No reference anywhere: each file references what it defines (Aider's fallback).
        references: Mapping[str, Mapping[str, int]] = self._references or {
            name: dict.fromkeys(sorted(paths), 1) for name, paths in self._defines.items()}
        names = tuple(sorted(name for name in self._defines if name in references))
        unreferenced = sorted(name for name in self._defines if name not in references)
        node_set: set[str] = set()
        for name in names:
            node_set.update(references[name])
            node_set.update(self._defines[name])
        for name in unreferenced:
            node_set.update(self._defines[name])
        nodes = tuple(sorted(node_set))
        index = {node: i for i, node in enumerate(nodes)}
        edges: list[_Name] = []
        base_out = [0.0] * len(nodes)
        for name in names:
            definers = tuple(sorted(index[path] for path in self._defines[name]))
            referencers = sorted((index[path], count) for path, count in
                                 references[name].items())
            roots = tuple(math.sqrt(count) for _, count in referencers)
            edges.append(_Name(tuple(i for i, _ in referencers), roots, definers))
            weight = _ident_weight(name, set(), len(definers)) * len(definers)
            for (node, _), root in zip(referencers, roots, strict=True):
                base_out[node] += weight * root
        self_edges: list[list[str]] = [[] for _ in nodes]
        for name in unreferenced:
            for path in sorted(self._defines[name]):
                self_edges[index[path]].append(name)
        self._compiled = _Compiled(nodes, names, tuple(edges), tuple(base_out),
                                   tuple(tuple(found) for found in self_edges))
        return self._compiled


def _walk(compiled: _Compiled, chat: set[str], idents: set[str],
          personalization: Mapping[str, float],
          ) -> tuple[dict[str, float], dict[tuple[str, str], float]]:
    """networkx's `_pagerank_python` on the graph (personalised, and the dangling nodes' rank
    sent the same way, when anything personalises it; plain otherwise), and the rank that
    flows into each (defining file, name)."""
    nodes = compiled.nodes
    count = len(nodes)
    if not count:
        return {}, {}
    index = {node: i for i, node in enumerate(nodes)}
    weights = [_ident_weight(name, idents, len(edge.definers))
               for name, edge in zip(compiled.names, compiled.edges, strict=True)]
    out = list(compiled.base_out)
    for position, name in enumerate(compiled.names):
        if name in idents:  # a mentioned name weighs 10x: its edges' share grows
            edge = compiled.edges[position]
            extra = (weights[position] - _ident_weight(name, set(), len(edge.definers))) * len(
                edge.definers)
            for node, root in zip(edge.referencers, edge.roots, strict=True):
                out[node] += extra * root
    scale = [CHAT_WEIGHT if node in chat else 1 for node in nodes]
    total = [out[i] * scale[i] + SELF_EDGE * len(compiled.self_edges[i]) for i in range(count)]
    known = {index[node]: weight for node, weight in personalization.items() if node in index}
    share = sum(known.values())
    if share > 0:
        teleport = [known.get(i, 0.0) / share for i in range(count)]
    else:
        teleport = [1.0 / count] * count
    dangling = [i for i in range(count) if total[i] == 0.0]
    x = [1.0 / count] * count
    for _ in range(MAX_ITERATIONS):
        along = [x[i] * scale[i] / total[i] if total[i] else 0.0 for i in range(count)]
        following = [0.0] * count
        for weight, edge in zip(weights, compiled.edges, strict=True):
            sent = ALPHA * weight * sum(map(operator.mul, map(along.__getitem__,
                                                              edge.referencers), edge.roots))
            for node in edge.definers:
                following[node] += sent
        danglesum = ALPHA * sum(x[i] for i in dangling)
        for i in range(count):
            if compiled.self_edges[i]:
                following[i] += ALPHA * x[i] * SELF_EDGE * len(compiled.self_edges[i]) / total[i]
            following[i] += (danglesum + 1.0 - ALPHA) * teleport[i]
        error = sum(abs(a - b) for a, b in zip(following, x, strict=True))
        x = following
        if error < count * TOLERANCE:
            break
    flow: dict[tuple[str, str], float] = {}
    along = [x[i] * scale[i] / total[i] if total[i] else 0.0 for i in range(count)]
    for name, weight, edge in zip(compiled.names, weights, compiled.edges, strict=True):
        sent = weight * sum(map(operator.mul, map(along.__getitem__, edge.referencers),
                                edge.roots))
        for node in edge.definers:
            flow[(nodes[node], name)] = sent
    for i, names in enumerate(compiled.self_edges):
        for name in names:
            flow[(nodes[i], name)] = x[i] * SELF_EDGE / total[i]
    return dict(zip(nodes, x, strict=True)), flow


def _personalization(files: Iterable[str], chat: set[str], mentioned: set[str],
                     idents: set[str]) -> dict[str, float]:
    files = list(files)
    share = 100 / len(files)
    out: dict[str, float] = {}
    for path in files:
        weight = share if path in chat else 0.0
        if path in mentioned:
            weight = max(weight, share)
        if idents:
            pure = PurePosixPath(path)
            if {*pure.parts, pure.name, pure.stem} & idents:
                weight += share
        if weight > 0:
            out[path] = weight
    return out


def _ident_weight(ident: str, mentioned: Collection[str], definers: int) -> float:
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
