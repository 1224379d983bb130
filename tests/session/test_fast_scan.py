"""The rebuild's fast read of message lines (`facts.line_facts`, issue 31) gives exactly the
index a full decode of every line gives, on any ledger: lines in the order this version
writes their keys and in any other (older writers, other programs), fields of odd kinds,
corrupt and torn lines (reported and skipped the same way), blank lines, text that is not
ASCII and bytes that are not UTF-8."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_server.session.entries import SessionHeader
from agent_server.session.facts import EntryFacts, line_facts, message_facts
from agent_server.session.index import LedgerIndex, ScanEnd, scan

HEADER = SessionHeader("s", "/w", "2026-01-01T00:00:00.000Z")
IDS = st.sampled_from(["a", "b", "c", "d", "e", "f", "g"])  # few: duplicates and lost parents
TEXT = st.text(max_size=12)  # any code point: U+2028, CJK, astral, control characters
ODD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=False),
    TEXT,
    st.lists(st.integers(0, 3), max_size=2),
    st.dictionaries(TEXT, st.integers(), max_size=2),
)
NUMBER = st.one_of(st.integers(0, 10**7), st.floats(0, 1e6), st.booleans(), st.none(), TEXT)


def mostly(
    valid: st.SearchStrategy[Any], odd: st.SearchStrategy[Any] = ODD
) -> st.SearchStrategy[Any]:
    """`valid` four times in five, else something of another kind."""
    return st.integers(0, 4).flatmap(lambda n: valid if n else odd)


def _block() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.builds(lambda t: {"type": "text", "text": t}, st.text(min_size=1, max_size=12)),
        st.builds(lambda i: {"type": "toolCall", "id": i, "name": "read", "arguments": {}}, TEXT),
        st.builds(lambda d: {"type": "image", "data": d, "mimeType": "image/png"}, TEXT),
    )


USAGE = mostly(
    st.fixed_dictionaries(
        {"input": st.integers(0, 10**6), "output": mostly(st.integers(0, 10**5), NUMBER)},
        optional={
            "cacheRead": st.integers(0, 10**6),
            "cacheWrite": mostly(st.integers(0, 10**6), NUMBER),
            "cost": mostly(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "input": mostly(st.floats(0, 9), NUMBER),
                        "cacheRead": st.integers(0, 9),
                    },
                ),
            ),
        },
    ),
)
MESSAGE = st.fixed_dictionaries(
    {
        "role": mostly(st.sampled_from(["user", "assistant", "toolResult"])),
        "content": mostly(st.lists(_block(), max_size=3)),
    },
    optional={
        "usage": USAGE,
        "model": mostly(st.sampled_from(["sim-large", ""])),
        "note": mostly(st.just("externalEdit")),
        "attachments": st.lists(st.fixed_dictionaries({"blocks": st.integers(0, 2)}), max_size=2),
        "stopReason": st.just("stop"),
    },
)
MESSAGE_LINE = st.fixed_dictionaries(
    {
        "type": st.just("message"),
        "id": IDS,
        "parentId": st.one_of(st.none(), IDS),
        "timestamp": st.just("2026-01-01T00:00:01.000Z"),
        "message": MESSAGE,
    },
    optional={"cacheRetention": mostly(st.sampled_from(["short", "long", "none", "day"]))},
)
ENTRY = mostly(
    MESSAGE_LINE,
    st.one_of(
        st.fixed_dictionaries(  # fields of odd kinds where the envelope has strings
            {"type": st.one_of(st.just("message"), ODD), "id": st.one_of(IDS, ODD)},
            optional={"parentId": st.one_of(IDS, ODD), "timestamp": ODD, "message": ODD},
        ),
        st.builds(
            lambda i, p, m: {
                "type": "modelChange",
                "id": i,
                "parentId": p,
                "timestamp": "t",
                "provider": "sim",
                "model": m,
            },
            IDS,
            st.none() | IDS,
            TEXT,
        ),
        st.builds(
            lambda i, t: {"type": "title", "id": i, "parentId": None, "timestamp": "t", "title": t},
            IDS,
            TEXT,
        ),
    ),
)


@st.composite
def lines(draw: st.DrawFn) -> bytes:
    """One line's bytes: an entry in this version's key order or shuffled, or damaged."""
    entry = draw(ENTRY)
    keys = list(entry)
    if draw(st.booleans()):
        keys = draw(st.permutations(keys))
    raw = json.dumps(
        {k: entry[k] for k in keys},
        ensure_ascii=draw(st.booleans()),
        separators=(",", ":") if draw(st.booleans()) else (", ", ": "),
    ).encode()
    damage = draw(st.sampled_from(["none"] * 6 + ["cut", "byte", "blank", "spaces", "dupkey"]))
    if damage == "cut":
        raw = raw[: draw(st.integers(0, max(0, len(raw) - 1)))]
    elif damage == "byte":
        at = draw(st.integers(0, max(0, len(raw) - 1)))
        raw = (
            raw[:at]
            + draw(st.sampled_from([b"\xff", b"\xc3", b"\x00", b"}", b'"', b"\\"]))
            + raw[at + 1 :]
        )
    elif damage == "blank":
        raw = b""
    elif damage == "spaces":
        raw = b"  \t" + raw + b" \r"
    elif damage == "dupkey":  # a key twice: the last one counts, for every reader
        raw = raw[:-1] + b',"id":"g"}' if raw.endswith(b"}") else raw
    return raw.replace(b"\n", b"")


def _state(index: LedgerIndex, end: ScanEnd) -> tuple[object, ...]:
    return (
        index.ids,
        index.offsets.tolist(),
        index.lengths.tolist(),
        index.parents.tolist(),
        bytes(index.kinds),
        index.meta,
        index._sums,
        index.calls,
        index.model_change,
        index.system_prompt,
        index.tool_list,
        index.last_call,
        index.issues,
        index.size,
        index.line_count,
        end,
    )


@settings(max_examples=400, deadline=None)
@given(body=st.lists(lines(), max_size=12), newline=st.booleans(), at_end=st.booleans())
def test_the_fast_index_is_the_full_decode_index(
    body: list[bytes], newline: bool, at_end: bool
) -> None:
    data = b"\n".join(body) + (b"\n" if newline else b"")
    fast, full = LedgerIndex(HEADER, "d"), LedgerIndex(HEADER, "d")
    fast_end = scan(data, 100, fast, at_end=at_end)
    full_end = scan(data, 100, full, at_end=at_end, fast=False)
    assert _state(fast, fast_end) == _state(full, full_end)


def test_the_fast_read_takes_the_lines_this_version_writes_and_leaves_prompts() -> None:
    """Not a vacuous equality: message lines are read fast (in any key order), damaged
    lines and those of other kinds are not."""
    answer = {
        "type": "message",
        "id": "a",
        "parentId": None,
        "timestamp": "t",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": "é\u2028"}],
            "usage": {"input": 3, "output": 2, "cost": {"input": 0.5}},
            "model": "m",
        },
        "cacheRetention": "long",
    }
    raw = json.dumps(answer, ensure_ascii=False).encode()
    facts = line_facts(raw)
    assert facts is not None and facts.kind == "A" and facts.retained and facts.model == "m"
    assert facts.usage is not None and (facts.usage.input, facts.usage.cost.input) == (3, 0.5)
    shuffled = json.dumps(dict(reversed(list(answer.items())))).encode()
    assert line_facts(shuffled) == facts
    tool = {**answer, "message": {"role": "toolResult", "content": [], "toolCallId": "c"}}
    assert line_facts(json.dumps(tool).encode()) is not None
    prompt = {**answer, "message": {"role": "user", "content": [1, {"type": "text"}]}}
    assert line_facts(json.dumps(prompt).encode()) is None  # a block that is not an object
    assert line_facts(raw[:-3]) is None
    assert line_facts(raw.replace(b'"text"', b'"text\x01"', 1)) is None  # a raw control char


def _plain(facts: EntryFacts) -> tuple[object, ...]:
    usage = facts.usage
    counts = None
    if usage is not None:
        cost = usage.cost
        counts = (usage.input, usage.output, usage.cache_read, usage.cache_write,
                  cost.input, cost.output, cost.cache_read, cost.cache_write)  # fmt: skip
    return (facts.id, facts.parent_id, facts.timestamp, facts.kind, counts, facts.retained,
            facts.prompt, facts.model, facts.title, facts.target_id)  # fmt: skip


@settings(max_examples=1500, deadline=None)
@given(raw=lines())
def test_a_line_read_fast_gives_the_facts_of_its_full_decode(raw: bytes) -> None:
    """Line by line, with the prompt's first typed text (after its attachments' blocks), on
    lines of valid UTF-8 (the scan checks that first: `_not_utf8`)."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return
    facts = line_facts(raw)
    if facts is not None:
        assert _plain(facts) == _plain(message_facts(json.loads(raw)))
