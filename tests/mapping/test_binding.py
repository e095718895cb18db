"""CPU binding: whole physical cores per rank, and rankfiles Open MPI reads as meant."""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from linkscope.mapping.api import map_traffic
from linkscope.mapping.binding import core_sets, logical_cores, share
from linkscope.mapping.cost import topology_cost
from linkscope.mapping.emit import rankfile, rankfile_logical
from linkscope.topology.model import Device, DeviceKind
from linkscope.topology.presets import load_preset
from linkscope.traffic.synthetic import stencil

FAKE_HOST = Path(__file__).parent / "fixtures" / "smt-2x12x2.xml"
"""hwloc XML of 2 packages x 12 cores x 2 hardware threads, numbered as Linux does on k80-16's
class of machine (core i of the node: CPUs i and i + 24); made with
lstopo-no-graphics --input "pack:2 core:12 pu:2(indexes=0,24,1,25,...,23,47)" --of xml."""


def _cpu(cores, **attrs):
    return Device(id="cpu0", kind=DeviceKind.CPU, cores=tuple(cores), socket=0, attributes=attrs)


def test_core_sets_keep_smt_siblings_together():
    cpu = _cpu(list(range(12)) + list(range(24, 36)), physical_cores=12)
    sets = core_sets(cpu)
    assert sets[0] == (0, 24) and sets[11] == (11, 35) and len(sets) == 12
    assert core_sets(_cpu(range(4))) == ((0,), (1,), (2,), (3,))  # no SMT information: one CPU per set
    assert core_sets(_cpu(range(4), core_sets=[[0, 2], [1, 3]])) == ((0, 2), (1, 3))
    assert share(sets, 8, 4) == (4, 28)  # one whole core each
    assert share(sets, 30, 0) == tuple(sorted(range(12))) + tuple(range(24, 36))  # more ranks than cores: shared


def test_k80_ranks_never_share_a_physical_core():
    k80 = load_preset("k80-16")
    a = map_traffic(stencil((4, 4), periodic=True), topology_cost(k80, "bandwidth"), k80)
    rank_of_gpu = {g: r for r, g in enumerate(a.gpu_of_rank)}
    assert a.cores_of_rank[rank_of_gpu[0]] == (0, 24) and a.cores_of_rank[rank_of_gpu[4]] == (4, 28)
    physical = [c % 24 for cores in a.cores_of_rank for c in cores]  # k80-16: CPUs c and c + 24 are siblings
    assert len(physical) == 2 * len(set(physical))
    index = logical_cores(k80.of_kind(DeviceKind.CPU))
    assert index[24] == index[0] == 0 and index[36] == index[12] == 12
    assert a.core_index_of_rank[rank_of_gpu[4]] == (4,)
    assert "slot=4" in rankfile_logical(a).splitlines()[1 + rank_of_gpu[4]]


def _bindings(rankfile_path: Path, physical: bool, ranks: int) -> list[str]:
    """Open MPI's computed binding of each rank on the fake SMT host (--display-devel-map: the
    fake host's CPUs do not exist here, so the binding is computed, shown, and not applied)."""
    env = dict(os.environ, HWLOC_XMLFILE=str(FAKE_HOST), OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")
    cmd = ["mpirun", "--rankfile", str(rankfile_path), "--display-devel-map", "--report-bindings",
           "--mca", "rtc", "^hwloc", "-n", str(ranks)]
    if physical:
        cmd += ["--mca", "rmaps_rank_file_physical", "1"]
    proc = subprocess.run(cmd + ["true"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return re.findall(r"Binding: (\[.*\])", proc.stdout + proc.stderr)


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="Open MPI's mpirun is not installed")
def test_emitted_rankfiles_bind_whole_cores_under_mpirun(tmp_path):
    out = subprocess.run(["mpirun", "--version"], capture_output=True, text=True).stdout
    if "Open MPI) 4." not in out and "Open MPI) 5." not in out:
        pytest.skip("needs Open MPI 4 or 5")
    k80 = load_preset("k80-16")
    a = map_traffic(stencil((4, 4), periodic=True), topology_cost(k80, "bandwidth"), k80)
    rank_of_gpu = {g: r for r, g in enumerate(a.gpu_of_rank)}
    expected = {}
    for r in range(a.ranks):
        core = a.cores_of_rank[r][0] % 24
        package, inside = divmod(core, 12)
        boxes = [[".." for _ in range(12)] for _ in range(2)]
        boxes[package][inside] = "BB"  # both hardware threads of one core
        expected[r] = "".join("[" + "/".join(b) + "]" for b in boxes)
    assert expected[rank_of_gpu[0]].startswith("[BB/..") and expected[rank_of_gpu[4]].startswith("[../../../../BB/")
    if "Open MPI) 4." in out:
        physical = tmp_path / "rankfile"
        physical.write_text(rankfile(a))
        assert _bindings(physical, True, a.ranks) == [expected[r] for r in range(a.ranks)]
    logical = tmp_path / "rankfile-logical"
    logical.write_text(rankfile_logical(a))
    assert _bindings(logical, False, a.ranks) == [expected[r] for r in range(a.ranks)]
