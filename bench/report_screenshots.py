"""The screenshots in docs/img and their page heights: each report as ``linkscope report`` writes it, in
headless Chromium 1280 px wide with every ``<details>`` as shipped, the whole page.

    PYTHONPATH=src:. python3 bench/report_screenshots.py [--out docs/img]

Records: the measured 4 x H200 survey of 2026-11-28 (tests/fixtures/recordings/h200x4-2026-11-28, an old
record: the report derives its findings and verdict again) and SIMULATED surveys of mi250x-8gcd and
k80-16 (``linkscope survey --backend sim --preset P``, default options). Prints one line per report:
name, page height in px, the tallest cards, elements outside their card, overlapping texts.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MEASURED = ROOT / "tests" / "fixtures" / "recordings" / "h200x4-2026-11-28" / "linkscope" / "survey.json"
SIMULATED = ("mi250x-8gcd", "k80-16")


def _linkscope(*args: str, cwd: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), NO_COLOR="1")
    done = subprocess.run([sys.executable, "-m", "linkscope", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"linkscope {' '.join(args)} exited {done.returncode}: {done.stderr[-1500:]}")


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from tests.report.layout import measure, screenshot

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        runs = {"report-h200x4": MEASURED}
        for preset in SIMULATED:
            runs[f"report-{preset}"] = work / f"{preset}.json"
            _linkscope("survey", "--backend", "sim", "--preset", preset, "-o", str(runs[f"report-{preset}"]), cwd=work)
        for name, record in runs.items():
            page = work / f"{name}.html"
            _linkscope("report", str(record), "-o", str(page), cwd=work)
            result = measure(page, work)
            screenshot(page, args.out / f"{name}.png", work, height=int(result["height"]))
            tallest = sorted(result["sections"].items(), key=lambda kv: -kv[1])[:3]
            print(f"{name}: {result['height']} px; tallest cards {tallest}; outside their card "
                  f"{len(result['overflow'])}; overlapping texts {len(result['overlaps'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
