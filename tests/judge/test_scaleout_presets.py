"""Scale-out NICs of the multi-node classes that had none (#34): GB200 NVL72 racks (one ConnectX-7 400G per
GPU on its Grace), MI300X nodes (8 x 400G, one per GPU behind a PCIe switch), GCP A3 Mega (8 x 200 Gb/s
GPUDirect-TCPXO); ``cluster:PRESET:N`` joins them, and multi-rack / multi-VM nccl-tests outputs are judged."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from linkscope.judge.expect import Judge
from linkscope.judge.runs import judge_runs
from linkscope.judge.verdict import Verdict
from linkscope.results.peertools.detect import parse
from linkscope.topology import query
from linkscope.topology.presets import load_preset
from linkscope.topology.synthetic import synthetic_topology

PUBLIC = Path(__file__).resolve().parents[1] / "fixtures" / "public"


@pytest.mark.parametrize("preset, nics, gbit, tied", [("gb200-nvl72", 72, 400.0, 2),  # both NICs of its Grace
                                                     ("mi300x-8", 8, 400.0, 1), ("a3-mega", 8, 200.0, 1)])
def test_each_gpu_has_its_own_compute_nic_at_the_cited_rate(preset, nics, gbit, tied):
    topo = load_preset(preset)
    found = [d for d in topo.devices if d.kind.value == "nic"]
    assert len(found) == nics and {d.line_rate_gbit_per_s for d in found} == {gbit}
    assert all(d.attributes.get("source") for d in found)
    nearest = [query.nearest_nics(topo, g) for g in range(topo.gpu_count)]
    assert all(len(n) == tied for n in nearest)
    assert all(found[g].id in {x.id for x in nearest[g]} for g in range(topo.gpu_count))  # NIC k beside GPU k


@pytest.mark.parametrize("preset, gb_per_s", [("mi300x-8", 50.0), ("a3-mega", 25.0), ("gb200-nvl72", 50.0)])
def test_a_cluster_of_it_routes_between_nodes_through_the_nic_line_rate(preset, gb_per_s):
    topo = synthetic_topology(f"cluster:{preset}:2")
    per = load_preset(preset).gpu_count
    assert topo.gpu_count == 2 * per
    links = query.route(topo, 0, per)
    assert any(link.kind.value == "network" for link in links)
    assert query.theoretical_gb_per_s(topo, 0, per) == pytest.approx(gb_per_s)


def _judged(name: str, spec: str, hosts: int | None = None):
    run = parse((PUBLIC / name).read_text(), name)
    if hosts is not None:  # what `check --hosts` states
        run = replace(run, measurements=tuple(replace(m, extra={**(m.extra or {}), "hosts": hosts})
                                              for m in run.measurements))
    return list(zip(run.measurements, judge_runs([run], Judge(synthetic_topology(spec)))[0].judgements))


def test_two_gb200_racks_healthy_allreduce_reads_ok():
    # coreweave/nccl-tests README, 2 racks x 64 GPUs, NVLS-tree over the racks' NICs: concluded healthy
    judged = _judged("nccl-tests-gb200x128-2racks-coreweave-readme.txt", "cluster:gb200-nvl72:2", hosts=2)
    assert len(judged) == 12
    assert all(j.verdict is Verdict.OK for _, j in judged), [j.line for _, j in judged if j.verdict is not Verdict.OK][:1]


def test_two_a3_mega_vms_are_judged_and_large_sizes_read_ok():
    judged = _judged("nccl-tests-h100x16-a3mega-ztanfork.txt", "cluster:a3-mega:2")
    big = [j for m, j in judged if m.size_bytes >= 2 << 30]
    assert big and all(j.verdict is Verdict.OK for j in big), [j.line for j in big if j.verdict is not Verdict.OK][:1]
    assert not any("transfers between nodes" in (j.reason or "") for _, j in judged)
