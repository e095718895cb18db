"""Real host names in rankfiles and the sbatch script where the topology knows its host (issue 26):
a recording (NVML facts' hostname) or hwloc XML (HostName), not ``localhost``; a preset, a synthetic
spec and an hwloc XML without HostName name no host."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from linkscope.cli import main
from linkscope.discovery.auto import resolve_topology
from linkscope.mapping.emit import known_host_name

FX = Path(__file__).resolve().parents[1] / "fixtures"
RECORDED = FX / "machines" / "h100x2-vm"
POWER8 = FX / "hwloc" / "hwloc-test-power8gpudistances.xml"  # hwloc 3.0 XML: HostName under <topology>
DGX2 = FX / "hwloc" / "hwloc-test-nvidiaDGX2.xml"  # no HostName info


def _recorded_host() -> str:
    return json.loads((RECORDED / "nvml.json").read_text())["hostname"]


def _emit(tmp_path, source: list[str], ranks: int, kind: str) -> list[str]:
    traffic, out = tmp_path / "t.json", tmp_path / "emitted"
    assert main(["traffic", "gen", "ring", "--ranks", str(ranks), "-o", str(traffic)]) == 0
    assert main(["map", str(traffic), *source, "--emit", kind, "--emit-to", str(out)]) == 0
    return out.read_text().splitlines()


@pytest.mark.parametrize("kind", ["rankfile", "rankfile-logical"])
def test_a_recorded_machine_names_its_host_in_the_rankfile(tmp_path, kind):
    ranks = [line for line in _emit(tmp_path, ["--from", str(RECORDED)], 2, kind) if line.startswith("rank ")]
    assert len(ranks) == 2 and all(line.split("=")[1].split()[0] == _recorded_host() for line in ranks), ranks


def test_hwloc_hostname_goes_into_the_rankfile_and_the_sbatch_nodelist(tmp_path):
    lines = _emit(tmp_path, ["--from", str(POWER8)], 4, "rankfile-logical")
    assert [line.split()[1] for line in lines if line.startswith("rank ")] == \
        [f"{r}=drac-12.grenoble.grid5000.fr" for r in range(4)]
    script = _emit(tmp_path, ["--from", str(POWER8)], 4, "sbatch")
    assert "#SBATCH --nodelist=drac-12.grenoble.grid5000.fr" in script
    assert script.index("#SBATCH --nodelist=drac-12.grenoble.grid5000.fr") < script.index("set -euo pipefail")


def test_the_hwloc_3_topology_infos_are_read():
    topology, _ = resolve_topology(None, str(POWER8), None, allow_fallback=False)
    assert topology.name == "drac-12.grenoble.grid5000.fr" and known_host_name(topology) == topology.name


@pytest.mark.parametrize("source", [["--synthetic", "nvswitch:4"], ["--preset", "hgx-h200-4"], ["--from", str(DGX2)]])
def test_no_known_host_stays_localhost_without_a_nodelist(tmp_path, source):
    lines = _emit(tmp_path, source, 4, "rankfile")
    assert all(line.split()[1].startswith(f"{r}=localhost") for r, line in enumerate(x for x in lines if x.startswith("rank ")))
    assert not [line for line in _emit(tmp_path, source, 4, "sbatch") if "--nodelist" in line]


def test_hosts_option_still_wins(tmp_path):
    lines = _emit(tmp_path, ["--from", str(RECORDED), "--hosts", "gpu-node-7"], 2, "rankfile")
    assert [line.split()[1] for line in lines if line.startswith("rank ")] == ["0=gpu-node-7", "1=gpu-node-7"]
