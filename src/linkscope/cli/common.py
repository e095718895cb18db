"""Shared CLI helpers: consoles, topology selection options."""
from __future__ import annotations

import os

from rich.console import Console


def stdout_console() -> Console:
    """Data goes to stdout; colour follows NO_COLOR / FORCE_COLOR / the terminal."""
    return Console(highlight=False, soft_wrap=False, width=None if os.isatty(1) else 200)


def stderr_console() -> Console:
    """Progress, warnings and notes go to stderr."""
    return Console(stderr=True, highlight=False)
