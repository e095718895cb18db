"""Dump what NVML says about this machine's GPUs, raw, for recorded fixtures (issue 24: health, counters).

    python3 bench/nvml_dump.py OUT.json

Every call is recorded with its value or the NVML error it raised (name and code), so a fixture shows
what the real library returns on this machine, unsupported calls included.
"""
from __future__ import annotations

import json
import re
import sys
from typing import Any

import pynvml as n


def call(fn: Any, *args: Any) -> Any:
    try:
        value = fn(*args)
    except n.NVMLError as e:  # keep what the library said
        return {"nvml_error": str(e), "code": getattr(e, "value", None)}
    except Exception as e:
        return {"error": f"{type(e).__name__}: {e}"}
    return plain(value)


def plain(v: Any) -> Any:
    if isinstance(v, bytes):
        return v.decode(errors="replace")
    if isinstance(v, (int, float, str)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if hasattr(v, "_fields_"):
        return {name: plain(getattr(v, name)) for name, *_ in v._fields_}
    return repr(v)


def field_values(h: Any, names: list[str], links: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in names:
        fid = getattr(n, name, None)
        if fid is None:
            continue
        per_link = "NVLINK" in name and not re.search(r"_L\d+$", name) and "TOTAL" not in name
        scopes = range(links) if per_link else [0]
        for scope in scopes:
            key = f"{name}@{scope}"
            try:
                fv = n.nvmlDeviceGetFieldValues(h, [(fid, scope)] if hasattr(n, "c_nvmlFieldValue_t") else [fid])[0]
                out[key] = {"fieldId": fid, "scopeId": scope, "nvmlReturn": int(fv.nvmlReturn),
                            "valueType": int(fv.valueType), "value": plain(fv.value)}
            except Exception as e:
                out[key] = {"fieldId": fid, "scopeId": scope, "error": f"{type(e).__name__}: {e}"}
    return out


def main(path: str) -> int:
    n.nvmlInit()
    count = n.nvmlDeviceGetCount()
    fields = sorted(x for x in dir(n) if x.startswith("NVML_FI_DEV_") and
                    any(k in x for k in ("NVLINK", "PCIE", "REPLAY", "RECOVERY", "CRC", "ECC_")))
    p2p_caps = sorted(x for x in dir(n) if x.startswith("NVML_P2P_CAPS_INDEX_"))
    doc: dict[str, Any] = {"format": "linkscope.nvml_dump", "nvml_version": call(n.nvmlSystemGetNVMLVersion),
                           "driver_version": call(n.nvmlSystemGetDriverVersion),
                           "cuda_driver_version": call(n.nvmlSystemGetCudaDriverVersion), "gpus": []}
    handles = [n.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
    max_links = getattr(n, "NVML_NVLINK_MAX_LINKS", 18)
    for i, h in enumerate(handles):
        g: dict[str, Any] = {"index": i, "name": call(n.nvmlDeviceGetName, h), "uuid": call(n.nvmlDeviceGetUUID, h),
                             "pci": call(n.nvmlDeviceGetPciInfo, h),
                             "bar1": call(n.nvmlDeviceGetBAR1MemoryInfo, h), "memory": call(n.nvmlDeviceGetMemoryInfo, h),
                             "pcie_replay_counter": call(n.nvmlDeviceGetPcieReplayCounter, h),
                             "pcie_link_gen_current": call(n.nvmlDeviceGetCurrPcieLinkGeneration, h),
                             "pcie_link_gen_max": call(n.nvmlDeviceGetMaxPcieLinkGeneration, h),
                             "pcie_link_gen_gpu_max": call(getattr(n, "nvmlDeviceGetGpuMaxPcieLinkGeneration", lambda h: None), h),
                             "pcie_link_width_current": call(n.nvmlDeviceGetCurrPcieLinkWidth, h),
                             "pcie_link_width_max": call(n.nvmlDeviceGetMaxPcieLinkWidth, h),
                             "pcie_speed": call(getattr(n, "nvmlDeviceGetPcieSpeed", lambda h: None), h),
                             "numa_node": call(getattr(n, "nvmlDeviceGetNumaNodeId", lambda h: None), h),
                             "cpu_affinity": call(n.nvmlDeviceGetCpuAffinity, h, 4),
                             "virtualization_mode": call(n.nvmlDeviceGetVirtualizationMode, h),
                             "nvlink": []}
        for link in range(max_links):
            state = call(n.nvmlDeviceGetNvLinkState, h, link)
            entry = {"link": link, "state": state, "version": call(n.nvmlDeviceGetNvLinkVersion, h, link),
                     "remote_pci": call(n.nvmlDeviceGetNvLinkRemotePciInfo, h, link),
                     "remote_device_type": call(getattr(n, "nvmlDeviceGetNvLinkRemoteDeviceType", lambda h, l: None), h, link),
                     "errors": {c: call(n.nvmlDeviceGetNvLinkErrorCounter, h, link, getattr(n, c))
                                for c in ("NVML_NVLINK_ERROR_DL_REPLAY", "NVML_NVLINK_ERROR_DL_RECOVERY",
                                          "NVML_NVLINK_ERROR_DL_CRC_FLIT", "NVML_NVLINK_ERROR_DL_CRC_DATA",
                                          "NVML_NVLINK_ERROR_DL_ECC_DATA") if hasattr(n, c)}}
            g["nvlink"].append(entry)
        g["field_values"] = field_values(h, fields, max_links)
        g["p2p"] = {}
        for j, h2 in enumerate(handles):
            if i != j:
                g["p2p"][str(j)] = {c: call(n.nvmlDeviceGetP2PStatus, h, h2, getattr(n, c)) for c in p2p_caps}
                g["p2p"][str(j)]["topology_common_ancestor"] = call(n.nvmlDeviceGetTopologyCommonAncestor, h, h2)
        doc["gpus"].append(g)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, default=repr)
    print(f"nvml_dump: {count} GPUs, {len(fields)} field ids -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
