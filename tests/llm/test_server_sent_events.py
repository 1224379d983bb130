"""The streamed body's events are read by agent-server itself (issue 31): they must be the
events the SDKs' own decoder finds, however the body is cut into reads and whatever line
endings, comments and fields it holds."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from anthropic._streaming import SSEDecoder
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_server.llm.provider_stream import server_sent_events

NAME = st.sampled_from(["content_block_delta", "message_stop", "ping", "error", "response.x"])
# Text a body can carry: UTF-8 has no lone surrogates (Cs).
DATA = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)),
               max_size=20)
LINE = st.one_of(
    st.builds(lambda v: f"data: {v}", DATA),
    st.builds(lambda v: f"data:{v}", DATA),
    st.just("data"),
    st.builds(lambda v: f"event: {v}", NAME),
    st.builds(lambda v: f": comment {v}", DATA),
    st.builds(lambda v: f"id: {v}", DATA),
    st.just("retry: 10"),
)
EVENT = st.lists(LINE, min_size=1, max_size=4)


async def _chunks(body: bytes, cuts: list[int]) -> AsyncIterator[bytes]:
    start = 0
    for cut in sorted(set(cuts)):
        if start < cut < len(body):
            yield body[start:cut]
            start = cut
    yield body[start:]


async def _ours(body: bytes, cuts: list[int]) -> list[tuple[str | None, str]]:
    events = server_sent_events(_chunks(body, cuts))
    return [(name, data.decode()) async for name, data in events]


async def _sdk(body: bytes, cuts: list[int]) -> list[tuple[str | None, str]]:
    events = SSEDecoder().aiter_bytes(_chunks(body, cuts))
    return [(sse.event, sse.data) async for sse in events]


@settings(max_examples=300, deadline=None)
@given(
    events=st.lists(EVENT, max_size=6),
    newline=st.sampled_from(["\n", "\r\n", "\r"]),
    cuts=st.lists(st.integers(0, 400), max_size=8),
)
def test_the_events_are_the_ones_the_sdk_decoder_finds(
    events: list[list[str]], newline: str, cuts: list[int]
) -> None:
    body = "".join(newline.join(lines) + newline * 2 for lines in events).encode()
    ours, theirs = asyncio.run(_ours(body, cuts)), asyncio.run(_sdk(body, cuts))
    # The SDK's decoder also yields events without data; both streams pass those over.
    assert [e for e in ours if e[1]] == [e for e in theirs if e[1]]
    assert [data for _, data in ours] == [
        "\n".join(
            line.partition(":")[2].removeprefix(" ") for line in lines if line.startswith("data")
        )
        for lines in events
        if any(line.startswith("data") for line in lines)
    ]


def test_an_event_split_across_reads_and_several_in_one_read_come_out_whole() -> None:
    body = b'event: a\ndata: {"x":1}\n\nevent: b\r\ndata: {"y"\r\ndata: :2}\r\n\r\n'
    for cuts in ([], [3], [len(body) - 1], list(range(len(body)))):
        assert asyncio.run(_ours(body, cuts)) == [("a", '{"x":1}'), ("b", '{"y"\n:2}')]
