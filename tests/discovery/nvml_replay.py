"""A pynvml double that answers from a recorded NVML dump (``bench/nvml_dump.py`` on the GPU
machine: ``format: linkscope.nvml_dump``), so the link-health and BAR1 readers run on what a real
driver answered. Only the calls those readers make are replayed; an answer the dump holds as
``{"nvml_error": ..., "code": N}`` is raised as ``pynvml.NVMLError(N)``, as the real call did, and a
field id the dump did not ask for comes back NOT_SUPPORTED (the dump asked for every NVLink, PCIe,
replay, CRC and ECC field id of nvidia-ml-py 13.615)."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pynvml

_ERROR_COUNTERS = {0: "NVML_NVLINK_ERROR_DL_REPLAY", 1: "NVML_NVLINK_ERROR_DL_RECOVERY", 2: "NVML_NVLINK_ERROR_DL_CRC_FLIT",
                   3: "NVML_NVLINK_ERROR_DL_CRC_DATA", 4: "NVML_NVLINK_ERROR_DL_ECC_DATA"}
#: fields of the dump kept in a trimmed fixture: what the link-health and BAR1 readers ask for.
KEEP_GPU_KEYS = ("index", "name", "uuid", "pci", "bar1", "memory", "pcie_replay_counter", "pcie_link_gen_current",
                 "pcie_link_gen_max", "pcie_link_gen_gpu_max", "pcie_link_width_current", "pcie_link_width_max",
                 "nvlink", "p2p")
KEEP_FIELD_WORDS = ("NVLINK_LINK_COUNT", "NVLINK_ERROR", "ERROR_COUNT", "NVLINK_GET_STATE", "PCIE_REPLAY", "PCIE_L0",
                    "PCIE_COUNT_CORRECTABLE", "PCIE_COUNT_NAKS", "PCIE_COUNT_RECEIVER", "PCIE_COUNT_BAD", "PCIE_COUNT_NON_FATAL",
                    "PCIE_COUNT_FATAL", "PCIE_COUNT_UNSUPPORTED", "PCIE_COUNT_LCRC", "PCIE_COUNT_LANE")


def trim(dump: dict[str, Any]) -> dict[str, Any]:
    """The part of a dump the replay needs (the full dump is 1.5 MB: every field id of every GPU)."""
    gpus = []
    for g in dump["gpus"]:
        kept = {k: g[k] for k in KEEP_GPU_KEYS if k in g}
        kept["field_values"] = {name: v for name, v in g.get("field_values", {}).items()
                                if any(w in name for w in KEEP_FIELD_WORDS)}
        gpus.append(kept)
    return {**{k: v for k, v in dump.items() if k != "gpus"}, "gpus": gpus,
            "trimmed": "field values and GPU keys the link-health and BAR1 readers use (tests/discovery/nvml_replay.py)"}


class ReplayNVML:
    """Enough of pynvml for ``nvml.read_link_health`` and ``nvml.read_bar1``, answering from a dump."""

    NVMLError = pynvml.NVMLError

    def __init__(self, dump: dict[str, Any]) -> None:
        self.gpus = dump["gpus"]
        self._fields = [{(v["fieldId"], v["scopeId"]): v for v in g.get("field_values", {}).values()} for g in self.gpus]

    @classmethod
    def load(cls, path: Path) -> ReplayNVML:
        return cls(json.loads(Path(path).read_text()))

    @staticmethod
    def _answer(value: Any) -> Any:
        if isinstance(value, dict) and "code" in value and "nvml_error" in value:
            raise pynvml.NVMLError(int(value["code"]))
        return value

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetFieldValues(self, h: int, ids: list[Any]) -> list[Any]:
        out = []
        for item in ids:
            field_id, scope = item if isinstance(item, tuple) else (item, 0)
            v = self._fields[h].get((field_id, scope))
            if v is None:
                out.append(SimpleNamespace(fieldId=field_id, scopeId=scope, nvmlReturn=pynvml.NVML_ERROR_NOT_SUPPORTED,
                                           valueType=pynvml.NVML_VALUE_TYPE_UNSIGNED_INT, value=SimpleNamespace(uiVal=0)))
            else:
                out.append(SimpleNamespace(fieldId=field_id, scopeId=scope, nvmlReturn=v["nvmlReturn"],
                                           valueType=v["valueType"], value=SimpleNamespace(**v["value"])))
        return out

    def _link(self, h: int, link: int) -> dict[str, Any]:
        links = self.gpus[h]["nvlink"]
        if link >= len(links):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return links[link]

    def nvmlDeviceGetNvLinkState(self, h: int, link: int) -> int:
        return int(self._answer(self._link(h, link)["state"]))

    def nvmlDeviceGetNvLinkErrorCounter(self, h: int, link: int, counter: int) -> int:
        return int(self._answer(self._link(h, link)["errors"][_ERROR_COUNTERS[counter]]))

    def nvmlDeviceGetPcieReplayCounter(self, h: int) -> int:
        return int(self._answer(self.gpus[h]["pcie_replay_counter"]))

    def nvmlDeviceGetBAR1MemoryInfo(self, h: int) -> Any:
        return SimpleNamespace(**self._answer(self.gpus[h]["bar1"]))

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: int) -> int:
        return int(self._answer(self.gpus[h]["pcie_link_gen_current"]))

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: int) -> int:
        return int(self._answer(self.gpus[h]["pcie_link_width_current"]))

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: int) -> int:
        return int(self._answer(self.gpus[h]["pcie_link_gen_max"]))

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: int) -> int:
        return int(self._answer(self.gpus[h]["pcie_link_width_max"]))

    def nvmlDeviceGetGpuMaxPcieLinkGeneration(self, h: int) -> int:
        return int(self._answer(self.gpus[h]["pcie_link_gen_gpu_max"]))

    def p2p_pci(self, a: int, b: int) -> int | None:
        """NVML_P2P_CAPS_INDEX_PCI (4) of a pair as the dump recorded it."""
        value = self.gpus[a].get("p2p", {}).get(str(b), {}).get("NVML_P2P_CAPS_INDEX_PCI")
        return value if isinstance(value, int) else None
