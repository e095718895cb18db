#!/usr/bin/env bash
# Set up a virtual environment in .venv (once), run ruff and mypy, then the whole test suite.
# GPU tests skip without a GPU; MPI tests need mpirun + mpicc (Debian: openmpi-bin libopenmpi-dev);
# the browser test needs chromium. Extra pytest arguments pass through: bash scripts/test.sh -k topo
# pytest runs on every core (pytest-xdist: -n auto); tests sharing one costly fixture stay in one
# worker (--dist loadgroup). One process instead: bash scripts/test.sh -n 0
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${LINKSCOPE_VENV:-.venv}
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q -e ".[test]"
if command -v mpicc >/dev/null 2>&1; then
  # mpi4py must match the MPI library that mpirun starts.
  "$VENV/bin/python" -m pip install -q "mpi4py>=3.1"
fi
# static checks first (seconds; configured in pyproject.toml): lint findings or type errors fail the run
"$VENV/bin/ruff" check --quiet .
"$VENV/bin/mypy"
# The suite starts about 140 Python processes (CLI subprocesses, MPI ranks): with bytecode caching
# off (PYTHONDONTWRITEBYTECODE=1 in the caller's environment) each one recompiles linkscope's
# sources, ~0.2 CPU s apiece (18% of tests/comm/test_mpi_p2p.py's CPU time, 2026-11-25).
unset PYTHONDONTWRITEBYTECODE
exec "$VENV/bin/python" -m pytest -q -n auto --dist loadgroup "$@"
