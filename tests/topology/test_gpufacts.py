"""The GPU facts table: lookup by product name and PCI id, citations, and the figures it carries."""
from __future__ import annotations

from dataclasses import FrozenInstanceError, fields

import pytest

from linkscope.topology.gpufacts import GPU_FACTS, GpuFacts, gpu_facts, gpu_facts_by_key, no_facts_reason


@pytest.mark.parametrize(("name", "key"), [
    ("NVIDIA H200", "h200-sxm"),
    ("NVIDIA H100 80GB HBM3", "h100-sxm"),
    ("Tesla K80", "k80"),
    ("Tesla K80 (GK210)", "k80"),
    ("AMD Instinct MI300X", "mi300x"),
    ("NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb"),
    ("NVIDIA A100-SXM4-40GB", "a100-sxm4-40gb"),
    ("NVIDIA A100-PCIE-40GB", "a100-pcie-40gb"),
    ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"),
    ("NVIDIA H100 PCIe", "h100-pcie"),
    ("NVIDIA H100 NVL", "h100-nvl"),
    ("NVIDIA H800", "h800-sxm"),
    ("NVIDIA H200 NVL", "h200-nvl"),
    ("Tesla V100-SXM2-16GB", "v100-sxm2"),
    ("Tesla V100-PCIE-32GB", "v100-pcie"),
    ("Tesla P100-PCIE-12GB", "p100-pcie-12gb"),
    ("NVIDIA GeForce RTX 3090", "rtx-3090"),
    ("NVIDIA GeForce RTX 4090", "rtx-4090"),
    ("NVIDIA GeForce RTX 5090", "rtx-5090"),
    ("NVIDIA RTX 6000 Ada Generation", "rtx-6000-ada"),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "rtx-pro-6000"),
    ("NVIDIA RTX A6000", "rtx-a6000"),
    ("NVIDIA L40S", "l40s"),
    ("NVIDIA A40", "a40"),
    ("NVIDIA GH200 480GB", "gh200-96gb"),
    ("NVIDIA GH200 144G HBM3e", "gh200-144gb"),
    ("NVIDIA B200", "b200"),
    ("NVIDIA B300 SXM6 AC", "b300"),
    ("NVIDIA GB200", "gb200"),
    ("NVIDIA GB10", "gb10"),  # nccl-tests on a DGX Spark prints "NVIDIA GB10" (dgx-spark-playbooks#25, #103)
    ("AMD Instinct MI100", "mi100"),
    ("AMD Instinct MI210", "mi210"),
    ("AMD Instinct MI250X/MI250", "mi250x"),
    ("AMD Instinct MI250X (GCD)", "mi250x"),
    ("AMD Instinct MI325X", "mi325x"),
    # lspci names (the product in brackets)
    ("NVIDIA Corporation GH100 [H200 SXM 141GB] (rev a1)", "h200-sxm"),
    ("GA100 [A100 SXM4 80GB]", "a100-sxm4-80gb"),
    ("Aldebaran/MI200 [Instinct MI250X/MI250]", "mi250x"),
    ("GA102 [GeForce RTX 3090]", "rtx-3090"),
    # PCI ids: vendor:device, and NVML's pciDeviceId (device << 16 | vendor)
    ("10de:2335", "h200-sxm"),
    ("10DE:2330", "h100-sxm"),
    ("0x233510DE", "h200-sxm"),
    ("1002:74a1", "mi300x"),
    # bare family names, user input (--gpu-model)
    ("H100", "h100-sxm"),
    ("h200", "h200-sxm"),
    ("a100", "a100-sxm4-40gb"),
    ("mi300x", "mi300x"),
    ("h100-pcie", "h100-pcie"),  # a row key
    # models of the public corpus (tests/fixtures/public sidecars)
    ("NVIDIA H20", "h20"),
    ("NVIDIA H20-3e", "h20-3e"),
    ("NVIDIA GeForce GTX 1080", "gtx-1080"),
    ("NVIDIA GeForce RTX 2080 Ti", "rtx-2080-ti"),
    ("TU102 [GeForce RTX 2080 Ti Rev. A]", "rtx-2080-ti"),
    ("10de:1b80", "gtx-1080"),
])
def test_lookup_by_name_and_pci_id(name: str, key: str) -> None:
    found = gpu_facts(name)
    assert found is not None, name
    assert found.key == key


@pytest.mark.parametrize("name", [
    "NVIDIA GeForce RTX 3090 Ti", "Quadro RTX 6000", "NVIDIA L40", "NVIDIA H100 SXM5 94GB", "NVIDIA GeForce GTX 1070",
    "NVIDIA GeForce GTX 1080 Ti", "NVIDIA H20-3x", "NVIDIA A100-SXM4-64GB", "AMD Instinct MI300A", "10de:ffff",
    "0xffff10de", "", "   ", "GPU", "NVIDIA",
    "H200 " * 200, "Intel Data Center GPU Max 1550",
])
def test_unknown_models_have_no_facts(name: str) -> None:
    assert gpu_facts(name) is None


def test_no_facts_reason_names_the_model() -> None:
    assert no_facts_reason("NVIDIA GeForce GTX 1070") == "no facts for GPU model 'NVIDIA GeForce GTX 1070'"
    assert gpu_facts(None) is None


def test_every_set_fact_is_cited_and_rows_are_frozen() -> None:
    skip = {"key", "name", "vendor", "architecture", "sources", "local_copy_provenance", "latency_class", "gcds_per_package"}
    for row in GPU_FACTS:
        for f in fields(GpuFacts):
            if f.name not in skip and getattr(row, f.name) not in (None, ()):
                assert row.source(f.name), f"{row.key}.{f.name}"
        assert gpu_facts_by_key(row.key) is row
        assert row.vendor in ("nvidia", "amd")
    with pytest.raises(FrozenInstanceError):
        GPU_FACTS[0].key = "x"  # type: ignore[misc]


def test_issue_rows_are_present() -> None:
    keys = {row.key for row in GPU_FACTS}
    for key in ("k80", "p100-sxm2", "v100-sxm2", "a100-sxm4-40gb", "a100-sxm4-80gb", "a100-pcie-40gb", "a100-pcie-80gb",
                "a40", "l40s", "rtx-3090", "rtx-4090", "rtx-5090", "rtx-6000-ada", "rtx-pro-6000", "h100-sxm", "h100-pcie",
                "h100-nvl", "h800-sxm", "h200-sxm", "gh200-96gb", "b200", "b300", "gb200", "mi100", "mi210", "mi250x",
                "mi300x", "mi325x"):
        assert key in keys


def test_measured_local_copies_and_latencies() -> None:
    h200, h100, k80 = gpu_facts("NVIDIA H200"), gpu_facts("NVIDIA H100 80GB HBM3"), gpu_facts("Tesla K80")
    assert h200 and h100 and k80
    assert h200.local_copy_gb_per_s == pytest.approx(2080, rel=0.01) and h200.local_copy_provenance == "measured"
    assert "nvbandwidth-all.txt" in h200.source("local_copy_gb_per_s")
    assert h100.local_copy_gb_per_s == pytest.approx(1490, rel=0.01)
    assert "tests/fixtures/peertools/h100x2/nvbandwidth.txt" in h100.source("local_copy_gb_per_s")
    # a K80 GPU cannot copy faster than half its 240 GB/s (read + write share it)
    assert k80.local_copy_gb_per_s is not None and k80.local_copy_gb_per_s < k80.memory_bw_gb_per_s / 2  # type: ignore[operator]
    assert k80.local_copy_provenance == "assumed"
    for row in (h100, h200):
        assert row.remote_read_latency_us == pytest.approx(0.83, abs=0.01)
        assert row.host_read_latency_us == pytest.approx(1.2, abs=0.03)
    assert h200.pcie_gb_per_s == pytest.approx(63.0, abs=0.1)
    assert h200.nvlink_gb_per_s == pytest.approx(478.1, abs=0.1)
    assert k80.pcie_gb_per_s == pytest.approx(15.75, abs=0.01)


def test_corpus_rows_state_what_their_sources_say() -> None:
    ti, gtx = gpu_facts("NVIDIA GeForce RTX 2080 Ti"), gpu_facts("NVIDIA GeForce GTX 1080")
    h20, h20e = gpu_facts("NVIDIA H20"), gpu_facts("NVIDIA H20-3e")
    assert ti is not None and gtx is not None and h20 is not None and h20e is not None
    assert ti.nvlink_gb_per_s == 50.0 and ti.pcie_generation == 3 and "Turing" in ti.source("nvlink_links")
    assert gtx.nvlink_links is None and gtx.memory_bw_gb_per_s == 320.0
    # the H20-3e's local copy is the public measurement; the H20 (96 GB) borrows no efficiency
    assert h20e.local_copy_gb_per_s == 1116.0 and h20e.local_copy_provenance == "measured"
    assert "nvbandwidth/issues/48" in h20e.source("local_copy_gb_per_s")
    assert h20.local_copy_gb_per_s is None and h20.latency_class == "hopper" and h20.nvlink_links == 18


def test_copy_engines_are_cudas_count_cited_per_row() -> None:
    counted = {row.key: row.copy_engines for row in GPU_FACTS if row.copy_engines is not None}
    assert counted == {"v100-sxm2": 6, "a100-sxm4-40gb": 3, "a100-sxm4-80gb": 3, "rtx-3090": 2, "l40s": 2, "rtx-4090": 2,
                       "rtx-6000-ada": 2, "h100-sxm": 3, "h100-nvl": 3}
    a40 = gpu_facts_by_key("a40")
    assert a40 is not None and a40.copy_engines is None  # the public deviceQuery outputs disagree (2 and 3)
    for key in counted:
        row = gpu_facts_by_key(key)
        assert row is not None and "asyncEngineCount" in row.source("copy_engines")
