"""bench/x2_visits_table.py on the recorded visits 4-9 (tests/fixtures/peertools/h100x2-visits4-9): the tables in
docs/benchmarks.md "Final tables: visits 4-9" come out of the committed outputs through the project's parsers."""
from __future__ import annotations

from pathlib import Path

from tests import benchscripts

ROOT = Path(__file__).parents[1]


def test_the_docs_tables_come_from_the_fixtures():
    tool = benchscripts.load("x2_visits_table")
    d = tool.DEFAULT_DIR
    copies, latency, mpi = "\n".join(tool.copies(d)), "\n".join(tool.latency(d)), "\n".join(tool.mpi(d))
    assert "| ce (memcpy_write_ce) | 64 MiB | 9 | 388.1 / 388.3 / 388.1 | 388.6 / 388.7 / 389.4 | 1.001 |" in copies
    assert "| sm-pull (memcpy_read_sm) | 64 MiB | 9 | 373.6 / 373.9 / 374.3 | 373.2 / 373.1 / 373.3 | 0.998 |" in copies
    assert "| GPU0 <- GPU1 | 0.8313 / 0.8304 | 0.8263 / 0.8260 | 1.006 |" in latency
    assert "| allreduce | HH | 8 B | 6 | 1.13 / 1.14 / 1.31 | 2.44 / 2.53 / 2.60 | 0.451 |" in mpi
    assert "| bw | DD | 64 MiB | 8 | 385,919 / 385,885 | 383,995 / 384,616 | 0.996 |" in mpi
    docs = (ROOT / "docs" / "benchmarks.md").read_text()
    assert all(line in docs for table in (copies, latency, mpi) for line in table.splitlines())
