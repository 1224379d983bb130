"""Bad input at the edge: every custom method answers InvalidParams (or its documented error)
with a message, and the server keeps serving."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pygls.exceptions import JsonRpcException

from agent_server.lsp.handlers import METHODS
from agent_server.sim.server import SimServer
from tests.lsp.conftest import AgentClient, sim_settings, start_agent_client

INVALID_PARAMS = -32602
INVALID_REQUEST = -32600
DOCUMENTED = {INVALID_PARAMS, -33001, -33002, -33003, -33004}


async def expect_error(agent: AgentClient, method: str, params: Any) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as caught:
        await agent.request(method, params)
    return caught.value


async def test_invalid_params_name_the_field(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent:
        session_id = await agent.new_session()
        cases: list[tuple[str, Any, str]] = [
            ("agent/turn", {"sessionId": session_id}, "'prompt' is required"),
            ("agent/turn", {"sessionId": session_id, "prompt": 42}, "'prompt'"),
            ("agent/turn", {"sessionId": session_id, "prompt": "  "}, "must not be empty"),
            (
                "agent/turn",
                {"sessionId": session_id, "prompt": [{"type": "video"}]},
                "prompt[0].type",
            ),
            (
                "agent/turn",
                {
                    "sessionId": session_id,
                    "prompt": [{"type": "image", "mimeType": "image/png", "data": "%%%"}],
                },
                "base64",
            ),
            ("agent/turn", {"sessionId": 7, "prompt": "hi"}, "'sessionId' must be a string"),
            (
                "agent/turn",
                {"sessionId": session_id, "prompt": [{"type": "text", "text": "x" * 1_500_000}] * 2},
                "'prompt' is longer than 2000000 characters",
            ),
            ("agent/session/new", {}, "'workspaceUri' is required"),
            ("agent/session/new", {"workspaceUri": "http://example.com"}, "file://"),
            (
                "agent/session/new",
                {"workspaceUri": agent.workspace_uri(), "title": "t" * 1001},
                "'title' is longer than 1000 characters",
            ),
            ("agent/rewind", {"sessionId": session_id}, "'entryId' is required"),
            (
                "agent/rewind",
                {"sessionId": session_id, "entryId": "x", "summarize": "yes"},
                "'summarize' must be true or false",
            ),
            ("agent/compact", [1, 2], "params must be an object"),
            (
                "agent/rewind",
                {"sessionId": session_id, "entryId": "x", "restore": "everything"},
                "'restore' must be one of conversation, files, both",
            ),
            ("agent/mode/set", {"sessionId": session_id}, "'mode' is required"),
            (
                "agent/mode/set",
                {"sessionId": session_id, "mode": "yolo"},
                "'mode' must be one of ask, allowReads, allowAll",
            ),
            ("agent/model/set", {"sessionId": session_id}, "'model' is required"),
            ("agent/model/list", {}, "'workspaceUri' is required"),
            (
                "agent/mention/complete",
                {"workspaceUri": agent.workspace_uri(), "query": 3},
                "'query' must be a string",
            ),
            (
                "agent/mention/complete",
                {"workspaceUri": agent.workspace_uri()},
                "'query' is required",
            ),
            ("agent/rewind/preview", {"sessionId": session_id}, "'entryId' is required"),
            ("agent/rewind/changes", {"sessionId": session_id}, "'entryId' is required"),
            ("agent/userIdle", {}, "agent/userIdle: 'idle' is required (true or false)"),
            ("agent/userIdle", None, "'idle' is required"),
            ("agent/userIdle", {"idle": None}, "'idle' is required"),
            ("agent/userIdle", {"idle": "true"}, "'idle' must be true or false, not str"),
            ("agent/userIdle", {"idle": 1}, "'idle' must be true or false, not int"),
        ]
        for method, params, fragment in cases:
            error = await expect_error(agent, method, params)
            assert error.code == INVALID_PARAMS, (method, params, error)
            assert fragment in error.message, (fragment, error.message)

        no_entry = await expect_error(agent, "agent/rewind/changes",
                                      {"sessionId": session_id, "entryId": "nope"})
        assert no_entry.code == -33004 and "no entry nope" in no_entry.message
        unknown = await expect_error(agent, "agent/turn", {"sessionId": "nope", "prompt": "hi"})
        assert unknown.code == -33001 and "nope" in unknown.message
        elsewhere = await expect_error(
            agent, "agent/session/new", {"workspaceUri": (tmp_path / "elsewhere").as_uri()}
        )
        assert elsewhere.code == -33003
        bad_entry = await expect_error(
            agent, "agent/rewind", {"sessionId": session_id, "entryId": "zzz"}
        )
        assert bad_entry.code == -33004


json_leaf = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
)
json_value = st.recursive(
    json_leaf,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)


async def test_fuzz_every_method_and_keep_serving(
    workspace: Path, sim: SimServer, tmp_path: Path
) -> None:
    async with start_agent_client([workspace], sim_settings(sim, tmp_path)) as agent:
        session_id = await agent.new_session()
        session_ids = st.sampled_from([session_id, "missing"]) | st.text(max_size=12) | json_value
        params = st.one_of(
            json_value,
            st.fixed_dictionaries(
                {},
                optional={
                    "sessionId": session_ids,
                    "workspaceUri": st.sampled_from([agent.workspace_uri(), "file:///nowhere", "x"])
                    | json_value,
                    "prompt": st.text(max_size=30) | json_value,
                    "entryId": st.text(max_size=10) | json_value,
                    "instructions": st.text(max_size=20) | json_value,
                    "title": json_value,
                    "model": st.sampled_from(["sim-small", "no-such-model"]) | json_value,
                    "workDoneToken": json_value,
                    "mode": st.sampled_from(["ask", "allowAll", "nope"]) | json_value,
                    "restore": st.sampled_from(["files", "both", "all"]) | json_value,
                    "query": st.text(max_size=10) | json_value,
                    "idle": st.booleans() | json_value,
                },
            ),
        )
        answered: list[str] = []
        deleted: set[object] = set()  # a fuzzed agent/session/delete may name the real one

        @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
        @given(method=st.sampled_from(METHODS), raw=params)
        def one(method: str, raw: Any) -> None:
            calls.append((method, raw))

        calls: list[tuple[str, Any]] = []
        one()
        for method, raw in calls:
            failure: JsonRpcException | None = None
            try:
                await agent.request(method, raw)
            except JsonRpcException as error:
                failure = error
            if failure is None:
                answered.append("result")
                if method == "agent/session/delete" and isinstance(raw, dict):
                    deleted.add(raw.get("sessionId"))
                continue
            allowed = DOCUMENTED | {-33010}
            if raw is not None and not isinstance(raw, dict | list):
                allowed = {INVALID_REQUEST}  # JSON-RPC: params are an object or an array
            assert failure.code in allowed, (method, raw, failure)
            assert failure.message
            answered.append(str(failure.code))
        assert str(INVALID_PARAMS) in answered
        # Still serving, and still right: valid requests get results after all of that.
        listed = await agent.request("agent/session/list", {"workspaceUri": agent.workspace_uri()})
        assert (session_id in [s["sessionId"] for s in listed["sessions"]]) != (session_id in deleted)
        if session_id in deleted:  # deleted by a valid request: go on with a new one
            session_id = await agent.new_session()
        usage = await agent.request("agent/usage", {"sessionId": session_id})
        assert usage["sessionId"] == session_id
