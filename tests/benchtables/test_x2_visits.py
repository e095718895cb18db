"""tests/benchtables/x2_visits_table.py on the recorded visits 4-9 and 11-13 (tests/fixtures/peertools/h100x2-visits4-9,
h100x2-visits11-13): the tables in docs/benchmarks.md "Final tables: visits 4-13" come out of the committed outputs
through the project's parsers."""
from __future__ import annotations

from pathlib import Path

from tests.benchtables import x2_visits_table

ROOT = Path(__file__).parents[2]


def test_the_docs_tables_come_from_the_fixtures():
    tool = x2_visits_table
    d = tool.DEFAULT_DIR
    copies, latency, mpi = "\n".join(tool.copies(d)), "\n".join(tool.latency(d)), "\n".join(tool.mpi(d))
    probes = "\n".join(tool.probes())
    assert "| ce (memcpy_write_ce) | 64 MiB | 9 | 388.1 / 388.3 / 388.1 | 388.6 / 388.7 / 389.4 | 1.001 |" in copies
    assert "| sm-pull (memcpy_read_sm) | 64 MiB | 9 | 373.6 / 373.9 / 374.3 | 373.2 / 373.1 / 373.3 | 0.998 |" in copies
    assert "| remote: GPU0 <- GPU1 | 6 | 0.8313 / 0.8304 | 0.8263 / 0.8260 | 1.006 |" in latency
    assert "| host: GPU0 <- host | 13 | 1.2131 / 1.2271 | 1.2547 / 1.2073 | 0.991 |" in latency
    assert "| bw | DD | 16 MiB | 13 | 358,535 / 358,406 | 356,828 / 357,543 | 0.996 |" in mpi
    assert "| 11 | 16 MiB | C persistent | 12 | 358,005 | 357,064-359,161 | 1.000 |" in probes
    assert "| allreduce | HH | 8 B | 6 | 1.13 / 1.14 / 1.31 | 2.44 / 2.53 / 2.60 | 0.451 |" in mpi
    assert "| bw | DD | 64 MiB | 8 | 385,919 / 385,885 | 383,995 / 384,616 | 0.996 |" in mpi
    docs = (ROOT / "docs" / "benchmarks.md").read_text()
    assert all(line in docs for table in (copies, latency, mpi, probes) for line in table.splitlines())
