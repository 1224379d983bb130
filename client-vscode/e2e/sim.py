"""The simulator for the end-to-end test: the built-in scenario plus the panel's turns
(panel-turns.yaml), on a free loopback port. It prints its base URL, then reads fault specs
from stdin, one a line (docs/simulator.md), each applying from the next request: the test
makes the provider refuse a prompt as too long, or overload, at the moment it wants to.

    python e2e/sim.py        (the test starts it; not part of the product)
"""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path

import yaml

from agent_server.sim.scenario import parse_scenario
from agent_server.sim.server import SimServer
from agent_server.sim.simulator import Simulator

HERE = Path(__file__).resolve().parent
DEFAULT = HERE.parent.parent / "agent_server" / "sim" / "scenarios" / "default.yaml"


async def main() -> None:
    scenario = yaml.safe_load(DEFAULT.read_text(encoding="utf-8"))
    scenario["turns"] += yaml.safe_load((HERE / "panel-turns.yaml").read_text(encoding="utf-8"))
    simulator = Simulator(scenario=parse_scenario(scenario, "e2e"))
    loop = asyncio.get_running_loop()
    done = asyncio.Event()

    def read_faults() -> None:
        for line in sys.stdin:
            if line.strip():
                loop.call_soon_threadsafe(simulator.set_faults, line.strip())
        loop.call_soon_threadsafe(done.set)

    async with SimServer(simulator) as server:
        print(server.base_url, flush=True)
        threading.Thread(target=read_faults, daemon=True).start()
        await done.wait()


if __name__ == "__main__":
    asyncio.run(main())
