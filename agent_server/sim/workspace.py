"""The sample workspace the default scenario is written against.

`write_sample_workspace(dest)` creates a small Python project ("stockroom", an inventory CLI)
under `dest`: a README, a pyproject, five modules of 50-200 lines, two test files, an
architecture note, and two generated files: `data/stock.csv` (400 rows, one with a bad
quantity and one duplicated SKU) and `logs/app.log` (about 2,600 lines, ~230 KB, with
warnings and tracebacks). The generated files are the same on every call.

The static files live in `sample_workspace/` next to this module; files there named
`*.sample` are written without that suffix (so that linters and type checkers leave the sample
Python alone).
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

_SAMPLE_SUFFIX = ".sample"
_PREFIXES = ("BRK", "NUT", "BLT", "WSH", "SCR", "GSK", "BRG", "FLT", "HOS", "VLV")
_NAMES = {
    "BRK": "Brake pad",
    "NUT": "Hex nut",
    "BLT": "Bolt",
    "WSH": "Washer",
    "SCR": "Wood screw",
    "GSK": "Gasket",
    "BRG": "Ball bearing",
    "FLT": "Oil filter",
    "HOS": "Hose clamp",
    "VLV": "Check valve",
}
_SIZES = ("M4", "M5", "M6", "M8", "M10", "M12", "6 mm", "8 mm", "10 mm", "1/4 in", "3/8 in")
BAD_ROW = 214  # the CSV row (1-based, header = row 1) with quantity "12a"


def write_sample_workspace(dest: Path) -> None:
    """Create the sample workspace under `dest` (created if missing; files overwritten)."""
    dest.mkdir(parents=True, exist_ok=True)
    root = resources.files("agent_server.sim").joinpath("sample_workspace")
    _copy_tree(root, dest)
    (dest / "data").mkdir(exist_ok=True)
    (dest / "data" / "stock.csv").write_text(stock_csv(), encoding="utf-8")
    (dest / "logs").mkdir(exist_ok=True)
    (dest / "logs" / "app.log").write_text(app_log(), encoding="utf-8")


def _copy_tree(source: Traversable, dest: Path) -> None:
    for entry in source.iterdir():
        if entry.name == "__pycache__":
            continue
        if entry.is_dir():
            (dest / entry.name).mkdir(exist_ok=True)
            _copy_tree(entry, dest / entry.name)
        else:
            name = entry.name.removesuffix(_SAMPLE_SUFFIX)
            (dest / name).write_bytes(entry.read_bytes())


def _skus() -> list[str]:
    rng = random.Random(7)
    skus: list[str] = []
    while len(skus) < 400:
        sku = f"{rng.choice(_PREFIXES)}-{rng.randrange(1, 10000):04d}"
        if sku not in skus:
            skus.append(sku)
    return skus


def stock_csv() -> str:
    """data/stock.csv: 400 item rows."""
    rng = random.Random(42)
    lines = ["sku,name,location,quantity,reorder_level,unit_cost"]
    skus = _skus()
    for number, sku in enumerate(skus, start=2):
        prefix = sku[:3]
        name = f"{_NAMES[prefix]} {rng.choice(_SIZES)}"
        location = f"{'ABCDEFGH'[rng.randrange(8)]}{rng.randrange(1, 10)}"
        quantity = str(rng.randrange(0, 250))
        reorder = rng.randrange(2, 40)
        cost = f"{rng.randrange(5, 5000) / 100:.2f}"
        if number == BAD_ROW:
            quantity = "12a"
        if number == 337:
            sku = skus[120]  # a hand-edited duplicate
        lines.append(f"{sku},{name},{location},{quantity},{reorder},{cost}")
    return "\n".join(lines) + "\n"


def app_log() -> str:
    """logs/app.log: a week of activity with warnings, domain errors and storage tracebacks."""
    rng = random.Random(20240506)
    skus = _skus()
    at = datetime(2024, 5, 6, 7, 58, 12)
    lines: list[str] = []

    def emit(level: str, component: str, message: str) -> None:
        stamp = at.strftime("%Y-%m-%d %H:%M:%S") + f",{rng.randrange(1000):03d}"
        lines.append(f"{stamp} {level} {component}: {message}")

    while len(lines) < 2600:
        at += timedelta(seconds=rng.randrange(5, 400))
        roll = rng.random()
        sku = rng.choice(skus)
        if roll < 0.30:
            command = rng.choice(("list", "report low", "report value", "report moves --days 7",
                                  f"add {sku} --qty {rng.randrange(1, 50)}",
                                  f"take {sku} --qty {rng.randrange(1, 12)}"))
            pid = rng.randrange(2000, 9000)
            emit("INFO", "cli", f"command={command!r} user=workshop pid={pid}")
        elif roll < 0.50:
            emit("INFO", "storage", f"loaded {rng.randrange(396, 402)} items from data/stock.csv "
                                    f"in {rng.randrange(3, 40)} ms")
        elif roll < 0.62:
            kind = rng.choice(("delivery", "withdrawal"))
            emit("INFO", "storage", f"{kind} {sku} x{rng.randrange(1, 40)}")
        elif roll < 0.70:
            emit("INFO", "storage", "backed up stock to data/backups/stock-"
                                    f"{at:%Y%m%dT%H%M%S}Z.csv ({rng.randrange(21, 24)} KB)")
        elif roll < 0.78:
            emit("INFO", "reports", f"rendered {rng.choice(('low', 'value', 'moves'))} report: "
                                    f"{rng.randrange(3, 400)} rows, width 88")
        elif roll < 0.84:
            component, message = rng.choice((
                ("storage", f"journal has {rng.randrange(900, 2400)} entries; consider "
                            "`stockroom compact`"),
                ("storage", f"backup directory holds {rng.randrange(200, 900)} files "
                            "(no retention policy configured)"),
                ("reports", "column 'Name' squeezed from 34 to 21 characters to fit width 88"),
                ("config", "STOCKROOM_KEEP_BACKUPS is not set; keeping the default of 20"),
                ("cli", f"slow command: report value took {rng.randrange(900, 4000)} ms"),
            ))
            emit("WARNING", component, message)
        elif roll < 0.90:
            have = rng.randrange(0, 6)
            emit("ERROR", "cli", f"{sku}: cannot take {have + rng.randrange(1, 9)}, only {have} "
                                 "in stock")
        elif roll < 0.96:
            emit("ERROR", "cli", "storage failure")
            lines.extend(_parse_traceback())
        else:
            row = rng.randrange(3, 60)
            emit("ERROR", "storage", f"failed to parse row {row} of data/journal.jsonl: "
                                     "Expecting value: line 1 column 1 (char 0)")
    return "\n".join(lines) + "\n"


def _parse_traceback() -> list[str]:
    return [
        "Traceback (most recent call last):",
        '  File "/opt/stockroom/src/inventory/storage.py", line 84, in _parse_row',
        '    quantity=parse_quantity(row["quantity"]),',
        '  File "/opt/stockroom/src/inventory/models.py", line 60, in parse_quantity',
        '    raise StockError(f"invalid quantity {text!r}: expected a whole number")',
        "inventory.models.StockError: invalid quantity '12a': expected a whole number",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "/opt/stockroom/src/inventory/cli.py", line 117, in main',
        "    return run(args, settings)",
        '  File "/opt/stockroom/src/inventory/cli.py", line 69, in run',
        "    items = store.current_items()",
        '  File "/opt/stockroom/src/inventory/storage.py", line 111, in current_items',
        "    return apply_all(self.load_items(), self.load_movements())",
        '  File "/opt/stockroom/src/inventory/storage.py", line 75, in load_items',
        "    item = self._parse_row(row, number)",
        '  File "/opt/stockroom/src/inventory/storage.py", line 90, in _parse_row',
        "    raise StockFileError(self.stock_file, number, str(exc)) from exc",
        f"inventory.storage.StockFileError: failed to parse row {BAD_ROW} of data/stock.csv: "
        "invalid quantity '12a': expected a whole number",
    ]
