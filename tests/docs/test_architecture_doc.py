"""docs/architecture.md lists the same rooms in the same layers as tests/test_layers.py's LAYERS."""
from __future__ import annotations

import re
from pathlib import Path

from tests.test_layers import LAYERS

DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"


def test_layer_table_matches_the_layer_test():
    rows = {}
    for line in DOC.read_text().splitlines():
        m = re.match(r"\| (\d+) \| (.+?) \| .+ \|$", line)
        if m:
            rows[int(m.group(1))] = tuple(re.findall(r"`([^`]+)`", m.group(2)))
    assert rows == dict(enumerate(LAYERS))
