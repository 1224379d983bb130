"""The protocol is described once: the server serves exactly the requests the description
lists, and the description checks what it is given."""

from __future__ import annotations

from agent_server import protocol
from agent_server.lsp.handlers import METHODS, NOTIFICATIONS, REQUESTS
from tests.lsp.conformance import mismatches


def test_every_described_request_has_one_handler() -> None:
    assert sorted(REQUESTS) == sorted(m.name for m in protocol.CLIENT_REQUESTS)
    assert tuple(REQUESTS) == METHODS
    assert sorted(NOTIFICATIONS) == sorted(m.name for m in protocol.CLIENT_NOTIFICATIONS)
    names = [(m.name, m.sender) for m in protocol.METHODS]
    assert len(names) == len(set(names)), "a method is described twice"


def test_the_description_refuses_what_it_does_not_describe() -> None:
    usage = {"input": 1, "cacheRead": 2, "cacheWrite": 0, "output": 3, "cost": 0.5}
    assert mismatches(usage, protocol.LastTurnUsage) == []
    assert mismatches({**usage, "calls": 2}, protocol.LastTurnUsage) == []
    assert mismatches({**usage, "input": "1"}, protocol.LastTurnUsage) == [
        "$.input: '1' is not int"
    ]
    assert mismatches({**usage, "extra": 1}, protocol.LastTurnUsage) == [
        "$.extra: not described in LastTurnUsage"
    ]
    missing = dict(usage)
    del missing["output"]
    assert mismatches(missing, protocol.LastTurnUsage) == ["$.output: missing (LastTurnUsage)"]
    notice = {"kind": "notice", "level": "loud", "message": "x"}
    assert mismatches(notice, protocol.NoticeUpdate) == [
        "$.level: 'loud' is not one of ('info', 'warning', 'error')"
    ]
    assert mismatches({**notice, "level": "info"}, protocol.SessionUpdate) == []
