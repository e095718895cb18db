"""A third vendor is one platform row plus its own modules: registering a toy row (its pieces are the
objects in this module, standing in for a vendor's modules) reaches discovery, the topology's
ordinals, the launch environment, the env report, the run context, the health facts, the kernel
dialect, the fake runtime, the link counters and link health of ``watch``, MPI GPU-awareness, the
GPU a probed rank used (``audit``) and the hwloc / NCCL topology XML, with no other file changed."""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from linkscope import platforms
from linkscope.comm.audit import judge
from linkscope.comm.gpu_aware import detect, forced
from linkscope.counters import linkerrors
from linkscope.counters.sampler import FABRIC, plan_gpu
from linkscope.counters.watch import WatchOptions, run_watch
from linkscope.diagnose import gather
from linkscope.discovery import auto, hwloc_xml, nccl_xml, xmlfile
from linkscope.engines.gpu.fake import FakeRuntime
from linkscope.engines.gpu.kernels import compile_and_preload
from linkscope.mapping import emit
from linkscope.mapping.api import _visible_devices
from linkscope.mapping.assignment import Assignment
from linkscope.topology import io
from linkscope.topology.model import Device, DeviceKind, Link, LinkKind, Topology
from tests.counters.fake_nvml import FakeClock, FakeGpu, FakeNVML

HERE = __name__
FIXTURES = Path(__file__).resolve().parent / "fixtures"
TOY = "toyvendor"


def discover(host: Any, notes: list[str]) -> Topology:
    notes.append("toy discovery ran")
    gpus = tuple(Device(id=f"gpu{i}", kind=DeviceKind.GPU, index=i, vendor=TOY, pci_bus_id=f"0000:0{i}:00.0",
                        uuid=f"TOY-{i}", ordinals={TOY: 1 - i}) for i in range(2))
    cpu = Device(id="cpu0", kind=DeviceKind.CPU, numa_node=0)
    links = tuple(Link(g.id, "cpu0", LinkKind.PCIE, 1, 32.0) for g in gpus)
    return Topology(name="toy", devices=(*gpus, cpu), links=links, source="toy")


def version() -> str:
    return "toy 1.2"


def env_row() -> dict[str, Any]:
    return {"ok": True, "reason": "toy runtime here", "version": "1.2"}


class ToyLaunch:
    visible_devices_var = "ZE_AFFINITY_MASK"
    accepts_node_uuids = False

    def device_tokens(self, gpus: Sequence[Any]) -> list[str]:
        return [f"0.{d.ordinals.get(TOY, d.index)}" for d in gpus]

    def live_table(self) -> Any:
        return ["live"]

    def check(self, assignment: Any, live: Any, node_gpus: int | None) -> Any:
        return dataclasses.replace(assignment, notes=(*assignment.notes, f"toy checked against {live}"))

    def place(self, assignment: Any, rank: int, environ: Any, live: Any) -> tuple[dict[str, str], str]:
        return {"ZE_ENABLE_PCI_ID_DEVICE_ORDER": "1"}, f"toy placed rank {rank} by {live}"

    def env_file_head(self, assignment: Any) -> str:
        return "# toy head\n"

    def probed_gpu(self, record: Any, topology: Any) -> tuple[int | None, str] | None:
        if "toy_device" not in record:
            return None
        return int(record["toy_device"]), "the toy runtime's device the probe recorded"


class ToyFacts:
    recorded_file = "toy.json"
    vram_bar_in_sysfs = False
    unrecorded_link_health = "toy records no link state"

    def p2p_pairs(self, facts: Any) -> dict[frozenset[str], dict[str, Any]]:
        return {frozenset(p["buses"]): {"accessible": p["status"]} for p in facts.get("pairs", [])}

    def gpu_records(self, facts: Any) -> dict[str, Any]:
        return {}

    def host_name(self, topology: Any) -> str | None:
        return topology.name if topology.source == "toy" else None

    def link_health(self, facts: Any) -> list[tuple[str, Any, Any]]:
        return []


class ToyDialect:
    compiler = "toyc"
    prelude = "// toy prelude\n"
    bulk_copies = False

    def timer_options(self, rt: Any, ordinals: Sequence[int]) -> tuple[str, ...]:
        return ("-DTOY_TIMER=1",)


class ToyTraits:
    api = "TOY"
    device_word = "toy"
    cupy_is_hip = False
    fake_arch = "toy9"

    def host_alloc_flags(self, numa_user: bool) -> int:
        return 0

    def malloc_uncached(self, runtime: Any, ordinal: int, size_bytes: int) -> int | None:
        return None

    def wall_clock_khz(self, runtime: Any, ordinal: int) -> int:
        return 2 * int(runtime.rt.deviceGetAttribute(7, ordinal))


LAUNCH, FACTS = ToyLaunch(), ToyFacts()
TOY_PCI_ID = "0x1234"

ROW = platforms.Platform(
    key=TOY, label="Toy", hardware=True, engine="toy", engine_factory="linkscope.engines.sim:SimEngine",
    discover=f"{HERE}:discover", env_rows=(("toy runtime", f"{HERE}:env_row"),),
    version_probes=(("toy_runtime", f"{HERE}:version"),), launch=f"{HERE}:LAUNCH", facts=f"{HERE}:FACTS",
    kernels=ToyDialect(), ordinal_field="toy_ordinal", runtime_traits=ToyTraits(),
    fabric=platforms.LinkFabric("toylink", "ToyLink", "toy-link-counters-kib", "no active ToyLink"),
    mpi_support=platforms.MpiGpuSupport("ze", "Level Zero", "ze:device", "MPIX_Query_ze_support"),
    xml=platforms.XmlNames((TOY_PCI_ID,), ("TOYML",), "TOYUUID", "0x038001"))


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> platforms.Platform:
    """The toy row first in the table: hardware platforms are tried in table order."""
    monkeypatch.setattr(platforms, "PLATFORMS", (ROW, *platforms.PLATFORMS))
    return ROW


def _assignment(**kw: Any) -> Assignment:
    return Assignment(gpu_of_rank=(0, 1), cost=1.0, default_cost=1.0, metric="bytes", solver="test", optimal=True, **kw)


def test_live_discovery_tries_the_new_row(toy, tmp_path: Path) -> None:
    topology = auto.discover_live(tmp_path)
    assert topology.name == "toy" and topology.is_this_system and "toy discovery ran" in topology.notes


def test_its_ordinals_are_stored_and_its_old_field_read(toy) -> None:
    topology = discover(None, [])
    data = io.to_dict(topology)
    assert data["devices"][0]["ordinals"] == {TOY: 1}
    assert io.from_dict(data) == topology
    for device in data["devices"]:
        if "ordinals" in device:
            device[toy.ordinal_field] = device.pop("ordinals")[TOY]
    assert io.from_dict(data).gpu(1).ordinal() == 0


def test_launch_uses_its_variable_tokens_and_placement(toy) -> None:
    tokens, vendor, buses = _visible_devices(discover(None, []), [1, 0])
    assert (tokens, vendor) == (("0.0", "0.1"), TOY)
    mapping = _assignment(gpu_vendor=TOY, visible_device_of_rank=tokens, pci_bus_id_of_rank=buses)
    env = emit.rank_environment(mapping, 0)
    assert env["ZE_AFFINITY_MASK"] == "0.0" and "CUDA_VISIBLE_DEVICES" not in env and "HIP_VISIBLE_DEVICES" not in env
    plan = emit.launch_plan(mapping, {"OMPI_COMM_WORLD_LOCAL_RANK": "1"}, live_gpus=emit.node_device_table(mapping))
    assert plan.env["ZE_ENABLE_PCI_ID_DEVICE_ORDER"] == "1" and plan.device_says == "toy placed rank 1 by ['live']"
    assert emit.check_devices(mapping, 2).notes[-1] == "toy checked against ['live']"
    assert emit.env_files(mapping)["rank0.env"].startswith("# toy head\n")
    assert emit.known_host_name(discover(None, [])) == "toy"  # the name its discovery facts record
    unknown = emit.rank_environment(_assignment(), 0)  # a mapping of no known vendor sets every row's variable
    assert {"ZE_AFFINITY_MASK", "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"} <= set(unknown)


def test_env_and_run_context_read_its_probes(toy) -> None:
    from linkscope import envinfo
    from linkscope.results import context

    assert context.library_versions()["toy_runtime"] == "toy 1.2"
    rows = {row["name"]: row for row in envinfo.collect()["backends"]}
    assert rows["toy runtime"]["ok"] and rows["toy runtime"]["version"] == "1.2"


def test_health_reads_its_recorded_facts(toy, tmp_path: Path) -> None:
    (tmp_path / "toy.json").write_text(json.dumps({"pairs": [{"buses": ["0000:00:00.0", "0000:01:00.0"],
                                                              "status": "NOT_ACCESSIBLE"}]}))
    inputs = gather.recorded(tmp_path)
    assert set(inputs.vendor_facts) == {TOY}
    assert inputs.unrecorded_link_health() == "toy records no link state"
    report = inputs.report(discover(None, []))
    assert any("driver P2P accessible NOT_ACCESSIBLE" in p for path in report.paths for p in path.problems)


def test_kernels_compile_in_its_dialect(toy) -> None:
    rt = FakeRuntime(gpus=1, vendor=TOY)
    compile_and_preload(rt, (0,))
    assert rt.compile_options[-1][-1] == "-DTOY_TIMER=1"


def test_the_fake_runtime_reads_its_traits(toy) -> None:
    rt = FakeRuntime(gpus=1, vendor=TOY, wall_clock_khz_value=5)
    assert rt.properties(0)["gcn_arch"] == "toy9" and rt.wall_clock_khz(0) == 10


class ToyCounters(FakeNVML):
    fabric = "toylink"


def _judge(fabric: str) -> list[Any]:
    def snap(t: float, crc: int) -> dict[str, Any]:
        links = [{"link": 0, "active": True, "errors": {"crc_data": crc}}]
        return {"taken_unix_s": t, "gpus": {"0": {"fabric": fabric, "nvlink": {"links": links, "active_count": 1,
                                                                                "link_count": 1}}}}
    return linkerrors.judge_growth(snap(0.0, 0), snap(10.0, 5), "x")


def test_watch_names_its_fabric_and_reads_its_counters(toy) -> None:
    source = ToyCounters([FakeGpu(), FakeGpu(links=0)])
    plan, bare = plan_gpu(source, 0), plan_gpu(source, 1)
    assert plan.fabric == "toylink" and {c.source for c in plan.counters if c.key.bus == FABRIC} == {"toy-link-counters-kib"}
    assert bare.nvlink_unsupported == "no active ToyLink"
    clock = FakeClock()

    def popen(argv: Any) -> Any:
        class Proc:
            def wait(self, timeout: Any = None) -> int:
                clock.advance(0.5)
                for link in range(18):
                    source.nvlink(0, link, tx_bytes=1 << 26)
                return 0
        return Proc()

    result = run_watch(WatchOptions(command=("copy",), settle_s=0.0), source, clock=clock, sleep=lambda s: None,
                       popen=popen, now_utc=lambda: "2026-11-28T00:00:00+00:00")
    assert result.gpus[0].verdict.message.startswith("ToyLink carried")
    assert {r["bus"] for r in result.timeline if r["gpu"] == 0} == {"toylink", "pcie"}
    (toy_growth,) = _judge("toylink")
    assert toy_growth.element.endswith("ToyLink") and "no documented limit for ToyLink" in toy_growth.reason
    (nvlink_growth,) = _judge("nvlink")  # a fabric with documented limits is judged
    assert nvlink_growth.element.endswith("NVLink") and "DCGM" in nvlink_growth.reason


def test_mpi_awareness_asks_its_query_and_memory_kind(toy) -> None:
    kinds = detect("MPICH Version: 4.2", {}, memory_kinds="system,ze:device")
    assert kinds.of("ze") is True and kinds.verdict == "Level Zero-aware" and kinds.device_buffers_ok
    asked: list[str] = []

    def mpix(symbol: str) -> int | None:
        asked.append(symbol)
        return 1 if symbol == "MPIX_Query_ze_support" else None

    ompi = detect("Open MPI v5.0.5", {}, mpix=mpix, ompi_info=lambda: None)
    assert "MPIX_Query_ze_support" in asked and ompi.describe() == "Level Zero-aware (MPIX_Query_ze_support() = 1)"
    assert ompi.as_dict()["ze"] is True
    assert forced(False).verdict == "neither Level Zero-, CUDA- nor ROCm-aware"  # table order: the toy row first


def test_audit_finds_a_ranks_gpu_by_its_rules(toy) -> None:
    topology = discover(None, [])
    record = {"world_rank": 0, "local_rank": 0, "host": "h", "cpus": [0], "toy_device": 1}
    (view,) = judge([record], topology).ranks
    assert (view.gpu, view.gpu_source) == (1, "the toy runtime's device the probe recorded")


def test_hwloc_and_nccl_xml_know_its_gpus(toy) -> None:
    text = (FIXTURES / "hwloc" / "hwloc-test-nvidiaDGX2.xml").read_text()
    text = text.replace("[10de:1db8]", f"[{TOY_PCI_ID[2:]}:1db8]").replace('"NVML"', '"TOYML"')
    text = text.replace("NVIDIAUUID", "TOYUUID").replace('osdev_type="12"', 'osdev_type="0"')
    topology = hwloc_xml.topology_from_xml(xmlfile.parse(text, "toy hwloc"), origin="toy hwloc")
    gpus = topology.gpus
    assert gpus and all(g.vendor == TOY for g in gpus) and all(g.uuid and g.uuid.startswith("GPU-") for g in gpus)
    assert gpus[0].name == "Tesla V100-SXM3-32GB-H"  # its backend's osdev infos were read
    exported, _ = nccl_xml.export_xml(discover(None, []))
    pcis = [e for e in xmlfile.parse(exported, "toy nccl").iter("pci") if e.find("gpu") is not None]
    assert pcis and {(e.get("class"), e.get("vendor")) for e in pcis} == {("0x038001", TOY_PCI_ID)}
    again = nccl_xml.topology_from_xml(xmlfile.parse(exported, "toy nccl"), origin="toy nccl")
    assert {g.vendor for g in again.gpus} == {TOY}
