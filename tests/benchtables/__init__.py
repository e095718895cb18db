"""Table printers that turn recorded visit outputs (tests/fixtures, docs/runs) into the tables of
docs/benchmarks.md; tests check the docs against them. Each also runs as a script (see its text)."""
