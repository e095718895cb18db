"""Render the HTML report in headless Chromium: the screenshot is not blank, the page logged nothing.

How: Chromium's own ``--screenshot`` in headless mode, with ``--enable-logging=stderr --v=0``. Every
console message of the page (``console.*``, uncaught exceptions) is then logged by Chromium as a
``CONSOLE`` line on stderr; the report has no script, so any such line is a failure. A control page
with a deliberate ``console.error`` proves that this Chromium does log console messages (otherwise a
silent browser would pass the test). No CDP client and no extra Python package are needed.
CI needs the Debian package ``chromium`` (and ``fonts-dejavu-core`` for text; Chromium pulls it in).
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.report.report_samples import measured_record, simulated_record

pytestmark = pytest.mark.browser

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--enable-logging=stderr", "--v=0"]


def _shoot(page: Path, shot: Path, profile: Path, height: int = 3000) -> str:
    if CHROMIUM is None:
        pytest.skip("chromium not installed (apt-get install chromium)")
    cmd = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", f"--window-size=1280,{height}",
           f"--screenshot={shot}", page.resolve().as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert shot.exists(), proc.stderr[-2000:]
    return proc.stderr


def _console_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]


def _colour_stats(png: Path) -> tuple[int, float]:
    import matplotlib.image as mpimg
    import numpy as np

    image = mpimg.imread(png)
    pixels = (image[..., :3] * 255).astype(np.uint8).reshape(-1, 3)
    rgb = (pixels[:, 0].astype(np.uint32) << 16) | (pixels[:, 1].astype(np.uint32) << 8) | pixels[:, 2]
    distinct = len(np.unique(rgb))  # one integer per colour: np.unique(axis=0) took ~3 s on 3.8 M pixels
    inked = float((pixels.min(axis=1) < 240).mean())
    return distinct, inked


def test_control_page_console_error_is_detected(tmp_path):
    page = tmp_path / "control.html"
    page.write_text('<!DOCTYPE html><html><body><p>control</p><script>console.error("control-error")</script></body></html>')
    err = _shoot(page, tmp_path / "control.png", tmp_path / "profile")
    assert any("control-error" in line for line in _console_lines(err)), "this Chromium does not log console messages"


def test_report_renders_without_errors(tmp_path):
    from linkscope.report.html import write_report

    page = tmp_path / "report.html"
    write_report([measured_record(), simulated_record()], page)
    shot = tmp_path / "report.png"
    err = _shoot(page, shot, tmp_path / "profile")
    assert _console_lines(err) == []
    distinct, inked = _colour_stats(shot)
    assert distinct > 1000, f"screenshot looks blank: {distinct} distinct colours"
    assert inked > 0.05, f"screenshot looks blank: {inked:.1%} of pixels are not white"
