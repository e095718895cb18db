"""Run linkscope's CLI in a child process and hold it at a chosen moment, so a test can kill it
there (tests/cli/test_nothing_lost.py). Not a test module.

    python tests/cli/hold_run.py HOLD -- linkscope arguments...

HOLD is ``run:N`` (the simulated engine's N-th ``run`` call, N >= 1: after N-1 timed plans),
``final`` (the complete record is staged in its temporary file, before the rename over the target)
``read`` (the first user file is about to be read: ``check``, ``map``, ``report`` ...) or
``native`` (the simulated engine's first ``run`` says HOLD and then spends hours in one native call
that releases the GIL, as NumPy and SciPy's graph routines do: Python runs no signal handler until
it returns; ``hashlib.pbkdf2_hmac`` with 2**31 - 1 rounds stands in for a simulation inside SciPy).
At that moment the child writes ``HOLD`` on stderr and waits for a signal (``signal.pause``); the
test waits for that line, never for a fixed time.
"""
from __future__ import annotations

import os
import signal
import sys


def _hold() -> None:
    sys.stderr.write("HOLD\n")
    sys.stderr.flush()
    while True:
        signal.pause()


def main() -> int:
    hold, argv = sys.argv[1], sys.argv[3:]
    if hold.startswith("run:"):
        from linkscope.engines.sim import SimEngine

        at, calls = int(hold[4:]), [0]
        original = SimEngine.run

        def run(self, *args, **kwargs):
            calls[0] += 1
            if calls[0] == at:
                _hold()
            return original(self, *args, **kwargs)

        SimEngine.run = run  # type: ignore[method-assign]
    elif hold == "native":
        from linkscope.engines.sim import SimEngine

        def stuck(self, *args, **kwargs):
            sys.stderr.write("HOLD\n")
            sys.stderr.flush()
            import hashlib

            return hashlib.pbkdf2_hmac("sha256", b"x", b"y", 2**31 - 1)  # ~50 min in one C call

        SimEngine.run = stuck  # type: ignore[method-assign]
    elif hold == "read":
        from linkscope import userfiles

        read_bytes = userfiles.read_bytes

        def held_read(*args, **kwargs):
            _hold()
            return read_bytes(*args, **kwargs)

        userfiles.read_bytes = held_read  # type: ignore[assignment]
    elif hold == "final":
        from linkscope import atomic

        stage = atomic._stage

        def staged(path, content):
            tmp = stage(path, content)
            if ".partial" not in path.name:
                _hold()
            return tmp

        atomic._stage = staged  # type: ignore[assignment]
    from linkscope.cli import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    os.environ.setdefault("NO_COLOR", "1")
    sys.exit(main())
