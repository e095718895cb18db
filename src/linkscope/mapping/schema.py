"""The schema of a mapping JSON file (``linkscope.mapping``), checked by
``mapping.assignment.from_dict`` before any value is used (``userschema``). Names that ``launch``
copies into the environment (CUDA_VISIBLE_DEVICES, UCX_NET_DEVICES, NCCL_IB_HCA) are one-word
names: no whitespace, newline or control character can reach a variable."""
from __future__ import annotations

from ..discovery.sysfs import MAX_CPUS
from ..userschema import Flag, Free, List, Number, Record, Text
from .api import MODES
from .cost import METRICS

_NAME = Text(name=True)
_INDEX = Number(0, 2**31, integer=True)
_COST = Number(0, 1e300)
_OPT_COST = Number(0, 1e300, null=True)
_CPUS = List(List(Number(0, MAX_CPUS - 1, integer=True), max_len=MAX_CPUS))

MAPPING = Record(
    fields={
        "gpu_of_rank": List(_INDEX),
        "cost": _COST,
        "default_cost": _COST,
        "saved_fraction": Number(-1e300, 1, null=True),
        "metric": Text(choices=METRICS),
        "solver": Text(max_len=4096),
        "optimal": Flag(),
        "unit": Text(max_len=32),
        "topology": Text(max_len=4096),
        "mode": Text(choices=MODES),
        "new_rank_of_rank": List(_INDEX, null=True),
        "node_of_rank": List(_INDEX, null=True),
        "host_of_rank": List(_NAME, null=True),
        "nics_of_rank": List(List(_NAME), null=True),
        "nic_choice": Text(name=True, null=True),
        "nics_of_node": List(List(_NAME), null=True),
        "cores_of_rank": _CPUS,
        "core_index_of_rank": _CPUS,
        "visible_device_of_rank": List(_NAME, null=True),
        "pci_bus_id_of_rank": List(_NAME, null=True),
        "gpu_vendor": Text(choices=("nvidia", "amd"), null=True),
        "uniform": Flag(),
        "lower_bound": _OPT_COST,
        "elapsed_s": Number(0, 1e9),
        "notes": List(Free()),
        "pairwise_cost": _OPT_COST,
        "default_pairwise_cost": _OPT_COST,
        "exchange_time_us": _OPT_COST,
        "default_exchange_time_us": _OPT_COST,
    },
    required=("gpu_of_rank", "cost", "default_cost", "metric", "solver", "optimal"),
)
