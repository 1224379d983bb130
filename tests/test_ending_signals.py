"""The close after SIGHUP or SIGTERM is bounded: a process whose close cannot finish (a thread
that never returns keeps the interpreter from exiting) still ends, with the signal's status,
and says where each thread was (agent_server/ending_signals.py)."""

from __future__ import annotations

import signal
import subprocess
import sys

STUCK = """
import sys, threading, time
import agent_server.ending_signals as ending
ending.CLOSE_LIMIT = 0.5
stuck = threading.Thread(target=threading.Event().wait, name="never-returns")  # not a daemon
with ending.EndingSignals():
    stuck.start()
    print("ready", flush=True)
    try:
        while True:
            time.sleep(0.05)
    except ending.EndedBySignal as ended:
        sys.exit(ended.code)  # the interpreter then waits for `stuck`, forever
"""


def test_a_close_that_cannot_finish_still_ends_the_process_with_the_signals_status() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", STUCK], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        child.send_signal(signal.SIGTERM)
        _, stderr = child.communicate(timeout=120)  # a hang guard, not a timing
    finally:
        child.kill()
    assert child.returncode == 128 + signal.SIGTERM
    assert "still closing 0.5 s after the signal" in stderr
    assert "never-returns" in stderr or "wait" in stderr  # where the stuck thread was
