"""Every synthetic, XML and .npy input is refused before it uses more than 2 GB (issue 25): the worst
cases run in a child process whose peak RSS (``ru_maxrss``) is checked after the refusal."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
LIMIT_KIB = 2 * 1024 * 1024  # 2 GiB, as ru_maxrss counts it on Linux (KiB)

_CHILD = ("import json, resource, sys\nfrom linkscope.cli import main\ncode = main(sys.argv[1:])\n"
          "print(json.dumps({'code': code, 'maxrss_kib': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))")


def _peak(argv: list[str]) -> tuple[int, int, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), NO_COLOR="1")
    done = subprocess.run([sys.executable, "-c", _CHILD, *argv], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["code"], result["maxrss_kib"], done.stderr


def _sparse_npy(path: Path, shape: tuple[int, ...], dtype=np.float64) -> Path:
    array = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=shape)  # sparse on disk
    del array
    return path


@pytest.mark.parametrize("name, shape, dtype", [
    ("line-3gib.npy", (3 * 2**30,), np.uint8),        # was read whole (5.4 GB) before its shape was checked
    ("cube-3gb.npy", (2000, 2000, 100), np.float64),  # a huge 3-D array: was a MemoryError / 6 GB
])
def test_npy_refused_from_its_header(tmp_path, name, shape, dtype):
    path = _sparse_npy(tmp_path / name, shape, dtype)
    code, peak, err = _peak(["traffic", "show", str(path)])
    assert code == 1 and "Traceback" not in err and "square N x N" in err, err
    assert peak < LIMIT_KIB, f"peak RSS {peak} KiB"


def test_xml_with_2000_gpus_and_deep_nesting_refused_while_parsing(tmp_path):
    gpus = "".join(f'<object type="PCIDev" pci_busid="0000:{i // 256:02x}:{i % 256 // 8:02x}.{i % 8}" '
                   f'pci_type="0302 [10de:2330] [10de:16c1] a1"/>' for i in range(2000))
    many = tmp_path / "gpus.xml"
    many.write_text(f'<?xml version="1.0"?><topology version="2.0"><object type="Machine">{gpus}</object></topology>')
    deep = tmp_path / "deep.xml"
    deep.write_text('<?xml version="1.0"?><topology version="2.0">' + '<object type="Group">' * 200000
                    + "</object>" * 200000 + "</topology>")
    for path, needle in ((many, "more than 1024 GPUs"), (deep, "nested more than 64 deep")):
        code, peak, err = _peak(["topo", "--from", str(path)])
        assert code == 1 and needle in err, err
        assert peak < LIMIT_KIB, f"peak RSS {peak} KiB"


@pytest.mark.slow
def test_fattree_4096x8_all_to_all_refused_before_planning():
    code, peak, err = _peak(["model", "predict", "--synthetic", "fattree:4096x8", "--pattern", "all-to-all"])
    assert code == 1 and "the budget is 2.0 GiB" in err, err
    assert peak < LIMIT_KIB, f"peak RSS {peak} KiB"
