"""docs/presets.md's table of machine classes: every spec it names loads (#34: each machine class has a preset
or a synthetic spec)."""
from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from linkscope.cli import main

DOC = Path(__file__).resolve().parents[2] / "docs" / "presets.md"


def _specs() -> list[str]:
    text = DOC.read_text()
    section = text.split("### Machine classes and the spec that names each", 1)[1].split("\n## ", 1)[0]
    specs = [s for row in section.splitlines() if row.startswith("| ") and "`--" in row
             for s in re.findall(r"`(--(?:preset|synthetic) [^`]+)`", row)]
    return [s.replace("NODES", "2").replace("PRESET", "dgx-h100") for s in specs]


def test_the_table_names_the_issue_s_machine_classes():
    text = DOC.read_text().split("### Machine classes", 1)[1].split("\n## ", 1)[0]
    for name in ("Gen5", "bridged", "MI300X", "B200", "B300", "GB200 NVL72", "GH200"):
        assert name in text, name


@pytest.mark.parametrize("spec", _specs())
def test_each_spec_of_the_table_loads(spec):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        code = main(["topo", *shlex.split(spec)])
    assert code == 0, err.getvalue()
