"""NVIDIA's launch environment (its platform row's ``launch``): CUDA_VISIBLE_DEVICES names each
rank's GPU by the UUID it accepts where known, else by the CUDA ordinal; the CUDA runtime needs no
placement beyond that and no table of the node."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


class NvidiaLaunch:
    """``LaunchEnvironment`` of NVIDIA GPUs."""

    visible_devices_var = "CUDA_VISIBLE_DEVICES"
    accepts_node_uuids = True  # NVML's UUIDs are the ones CUDA_VISIBLE_DEVICES takes

    def device_tokens(self, gpus: Sequence[Any]) -> list[str]:
        """The UUID where known, else the CUDA ordinal, else the topology index."""
        out = []
        for device in gpus:
            ordinal = device.ordinals.get("nvidia")
            out.append(device.uuid or str(ordinal if ordinal is not None else device.index))
        return out

    def live_table(self) -> None:
        return None

    def check(self, assignment: Any, live: Any, node_gpus: int | None) -> Any:
        return assignment

    def place(self, assignment: Any, rank: int, environ: Mapping[str, str], live: Any) -> None:
        return None

    def env_file_head(self, assignment: Any) -> str:
        return ""

    def probed_gpu(self, record: Any, topology: Any) -> None:
        """None: audit's own path (NVML's GPU list by UUID or bus id, CUDA_VISIBLE_DEVICES) serves."""
        return None


LAUNCH = NvidiaLaunch()
