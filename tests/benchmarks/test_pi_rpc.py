"""pi through its RPC mode: a turn ends when pi is idle, a retry after an overflow included.

The pi here is a stand-in that speaks pi's RPC protocol (docs/rpc.md in its npm package) the
way pi 0.73.1 orders its events; the real pi runs in `bench recall` and `bench peers`, which
CI does not install."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from benchmarks.pi_rpc import PiRpc

# Each prompt names what the stand-in does: "plain" answers; "overflow" fails the first
# attempt for the window, compacts and retries on a timer, as pi does (get_state says idle
# between the compaction's end and the retry's start); "threshold" compacts after the answer;
# "error" ends on an error; "refuse" refuses the prompt; "exit" dies mid-turn.
STAND_IN = textwrap.dedent('''
    import json, os, sys, threading, time
    state = {"isStreaming": False, "isCompacting": False}
    lock = threading.Lock()
    def at_once(*events, **changes):
        # pi emits an event and changes its state in one tick of its event loop: get_state
        # sees both or neither
        with lock:
            state.update(changes)
            for event in events:
                sys.stdout.write(json.dumps(event) + "\\n")
            sys.stdout.flush()
    def answer(text, stop="stop"):
        error = {"errorMessage": "prompt is too long"} if stop == "error" else {}
        return {"type": "message_end", "message": {"role": "assistant", "stopReason": stop,
                "content": [{"type": "text", "text": text}], **error}}
    def compaction(reason, retry):
        at_once(answer("", "error") if reason == "overflow" else answer(f"done: {reason}"),
                {"type": "agent_end"}, {"type": "compaction_start", "reason": reason},
                isStreaming=False, isCompacting=True)
        time.sleep(0.2)
        at_once({"type": "compaction_end", "reason": reason, "willRetry": retry},
                isCompacting=False)
    def run(kind):
        at_once({"type": "agent_start"}, isStreaming=True)
        if kind == "overflow":
            compaction("overflow", True)
            time.sleep(0.5)  # the retry's timer: pi is idle meanwhile
            at_once({"type": "agent_start"}, isStreaming=True)
            at_once(answer("done after the retry"), {"type": "agent_end"}, isStreaming=False)
        elif kind == "threshold":
            compaction("threshold", False)
        elif kind == "exit":
            os._exit(3)
        else:
            at_once(answer("" if kind == "error" else f"done: {kind}",
                           "error" if kind == "error" else "stop"),
                    {"type": "agent_end"}, isStreaming=False)
    for line in sys.stdin:
        command = json.loads(line)
        if command["type"] == "get_state":
            with lock:
                data = dict(state)
            at_once({"id": command["id"], "type": "response", "command": "get_state",
                     "success": True, "data": data})
        elif command["type"] == "prompt":
            ok = command["message"] != "refuse"
            at_once({"id": command["id"], "type": "response", "command": "prompt",
                     "success": ok, **({} if ok else {"error": "no model"})})
            if ok:
                threading.Thread(target=run, args=(command["message"],)).start()
''')


def stand_in(tmp_path: Path) -> PiRpc:
    script = tmp_path / "pi.py"
    script.write_text(STAND_IN, encoding="utf-8")
    log = (tmp_path / "pi.err").open("w", encoding="utf-8")
    return PiRpc([sys.executable, str(script)], tmp_path, {}, log)


def test_a_turn_that_overflows_ends_with_its_retry_not_before(tmp_path: Path) -> None:
    rpc = stand_in(tmp_path)
    try:
        first = rpc.turn("overflow", 30)
        assert (first.ok, first.text) == (True, "done after the retry")
        after = rpc.turn("plain", 30)  # the next prompt is sent only once pi is idle
        assert (after.ok, after.text) == (True, "done: plain")
    finally:
        rpc.close()


def test_a_compaction_after_the_answer_is_waited_for(tmp_path: Path) -> None:
    rpc = stand_in(tmp_path)
    try:
        assert rpc.turn("threshold", 30).text == "done: threshold"
        assert rpc.turn("plain", 30).ok
    finally:
        rpc.close()


def test_failed_turns_say_why(tmp_path: Path) -> None:
    rpc = stand_in(tmp_path)
    try:
        errored = rpc.turn("error", 30)
        assert not errored.ok and "too long" in errored.error
        refused = rpc.turn("refuse", 30)
        assert not refused.ok and refused.error == "no model"
        gone = rpc.turn("exit", 30)
        assert not gone.ok and "exited" in gone.error
    finally:
        rpc.close()
