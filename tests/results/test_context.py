import json

from linkscope.results import context


def test_selected_env_keeps_behaviour_vars_only():
    env = {"CUDA_VISIBLE_DEVICES": "1,0", "NCCL_NVLS_ENABLE": "0", "UCX_TLS": "rc", "OMPI_MCA_pml": "ucx",
           "HSA_ENABLE_SDMA": "0", "HOME": "/root", "PATH": "/bin", "NCCL_IB_TOKEN": "s3cret"}
    assert context.selected_env(env) == {"CUDA_VISIBLE_DEVICES": "1,0", "HSA_ENABLE_SDMA": "0", "NCCL_NVLS_ENABLE": "0",
                                         "OMPI_MCA_pml": "ucx", "UCX_TLS": "rc"}


def test_collect_context_never_crashes_and_is_json(monkeypatch):
    def broken():
        raise RuntimeError("driver went away")

    from linkscope.discovery import nvml

    monkeypatch.setattr(nvml, "driver_version", broken)  # the platform table's nvidia_driver probe
    ctx = context.collect_context({"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}, gpu_names=["NVIDIA H200"], engine="sim")
    json.dumps(ctx)
    assert ctx["versions"]["nvidia_driver"] == "unavailable (RuntimeError: driver went away)"
    assert ctx["versions"]["linkscope"] and ctx["versions"]["python"]
    assert ctx["gpus"] == ["NVIDIA H200"] and ctx["env"] == {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    assert isinstance(ctx["host"], str) and ctx["os"]


def test_vendor_probes_can_be_skipped():
    ctx = context.collect_context({}, probe_vendor=False)
    assert set(ctx["versions"]) == {"linkscope", "python", "mpi4py"}  # mpi4py is not a vendor library


def test_context_does_not_import_the_engine():
    """results sits below engines: the vendor versions come through the platform table."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(context.__file__).read_text())
    imported = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not any("engines" in m for m in imported)


def test_hip_copy_path_variables_are_recorded():
    """ROC_P2P_SDMA_SIZE moves HIP's SDMA/blit threshold, GPU_MAX_HW_QUEUES the queues per device."""
    env = {"ROC_P2P_SDMA_SIZE": "0", "GPU_MAX_HW_QUEUES": "8", "HSA_ENABLE_PEER_SDMA": "0"}
    assert context.selected_env(env) == env
