"""docs/server.md names every setting and every metric the server has (and no other)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from server.config import Settings
from server.metrics import Metrics

DOC = (Path(__file__).parents[2] / "docs" / "server.md").read_text()


def _section(title: str) -> str:
    start = DOC.index(f"\n## {title}\n")
    end = DOC.find("\n## ", start + 1)
    return DOC[start : end if end >= 0 else len(DOC)]


def _first_cells(text: str) -> set[str]:
    """The backticked names in the first column of the section's tables."""
    names: set[str] = set()
    for line in text.splitlines():
        if line.startswith("| `"):
            first = line.split("|")[1]
            names.update(re.findall(r"`([a-z_0-9]+)(?:\{[^}]*\})?`", first))
    return names


def test_every_setting_is_in_the_settings_table() -> None:
    documented = _first_cells(_section("Settings"))
    missing = [f.name for f in dataclasses.fields(Settings) if f.name not in documented]
    assert missing == []


def test_the_metrics_table_lists_what_the_server_exports() -> None:
    metrics = Metrics(lambda: 0, lambda: {})
    exported = set()
    for family in metrics.registry.collect():
        kind = family.type
        exported.add(family.name + ("_total" if kind == "counter" else ""))
    names = _first_cells(_section("Metrics"))
    documented = {name for name in names if name.startswith("tripeaks_")}
    assert sorted(exported - documented) == []
    assert sorted(documented - exported) == []
