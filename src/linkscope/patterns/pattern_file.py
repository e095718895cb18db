"""A pattern read from a file: groups of transfers that run at the same time.

JSON (``.json``)::

    {"groups": [
        [[0, 1], [2, 3, "64MiB"]],                    # one group: 0->1 and 2->3 at once
        [{"src": 1, "dst": "host", "size": 4096}]     # then: GPU 1 -> host alone
    ]}

A bare list of groups (``[[[0, 1]], [[1, 0]]]``) is accepted too. Each transfer is
``[src, dst]``, ``[src, dst, size]`` or ``{"src": .., "dst": .., "size": ..}``.

CSV (any other extension)::

    # comments start with '#'; an optional header line "src,dst,size" is skipped
    0,1
    2,3,64MiB

    1,host

Each line is ``src,dst[,size]``; consecutive lines form one concurrent group and a blank line starts
the next group.

Ends are GPU indices in the topology's numbering or ``host``. A transfer without a size takes the
size of the sweep (``--sizes``); a transfer with a size always moves that size. Every group is
reported per transfer plus its total (``sum``). A GPU the topology does not have is a UserError
(raised by ``applies_to``, before anything runs). ``--gpus`` does not filter a file pattern.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import TopologyError, UserError
from ..topology.model import Topology
from ..units import parse_size
from ..userfiles import loads_strict, read_text, refuse_malformed
from .base import check_direction
from .methods import endpoint_reason
from .plan import HOST, Endpoint, Transfer, TransferPlan, Waiver

if TYPE_CHECKING:
    from .methods import Method as MethodInfo


@dataclass(frozen=True)
class FileTransfer:
    src: Endpoint
    dst: Endpoint
    size_bytes: int | None = None


@dataclass(frozen=True)
class FilePattern:
    """Groups of transfers from a file (see the module docstring for the formats)."""

    groups: tuple[tuple[FileTransfer, ...], ...]
    source: str = ""
    key: str = "file"

    @property
    def description(self) -> str:
        return f"{len(self.groups)} group(s) from {self.source or 'a pattern file'}"

    def applies_to(self, topology: Topology, gpus: Sequence[int], method_info: MethodInfo | None) -> Waiver | None:
        for i, group in enumerate(self.groups):
            for t in group:
                for end in (t.src, t.dst):
                    if isinstance(end, int) and not 0 <= end < topology.gpu_count:
                        raise TopologyError(
                            (f"pattern file {self.source or ''} group {i + 1} names GPU {end}, "
                             f"which does not exist in {topology.name!r}").replace("  ", " "),
                            hint=f"valid GPU indices: 0..{topology.gpu_count - 1}" if topology.gpu_count else "this topology has no GPU",
                        )
        if method_info is not None:  # the method table's endpoint rule, once per transfer
            for i, group in enumerate(self.groups):
                for t in group:
                    reason = endpoint_reason(method_info, t.src, t.dst)
                    if reason:
                        return Waiver(f"pattern file group {i + 1}: {reason}")
        return None

    def plan(self, topology: Topology, gpus: Sequence[int], size_bytes: int, method: str, direction: str) -> list[TransferPlan]:
        check_direction(direction)
        plans = []
        for i, group in enumerate(self.groups):
            transfers = tuple(Transfer(t.src, t.dst, t.size_bytes if t.size_bytes is not None else size_bytes) for t in group)
            plans.append(TransferPlan(self.key, direction, method, transfers, "sum" if len(transfers) > 1 else "none", f"group {i + 1}"))
        return plans


def _endpoint(value: Any, where: str) -> Endpoint:
    if isinstance(value, bool):
        raise UserError(f"{where}: bad transfer end {value!r}", hint="use a GPU index or 'host'")
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if text.lower() == HOST:
        return HOST
    try:
        return int(text)
    except ValueError:
        raise UserError(f"{where}: bad transfer end {text!r}", hint="use a GPU index or 'host'") from None


def _size(value: Any, where: str) -> int | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        size = parse_size(value if isinstance(value, int) else str(value).strip())
    except UserError as exc:
        raise UserError(f"{where}: {exc}", hint=exc.hint) from None
    if size <= 0:
        raise UserError(f"{where}: size must be positive, got {value!r}")
    return size


def _transfer(item: Any, where: str) -> FileTransfer:
    if isinstance(item, dict):
        if "src" not in item or "dst" not in item:
            raise UserError(f"{where}: a transfer object needs 'src' and 'dst'")
        return FileTransfer(_endpoint(item["src"], where), _endpoint(item["dst"], where), _size(item.get("size"), where))
    if isinstance(item, (list, tuple)) and len(item) in (2, 3):
        return FileTransfer(_endpoint(item[0], where), _endpoint(item[1], where), _size(item[2] if len(item) == 3 else None, where))
    raise UserError(f"{where}: a transfer is [src, dst], [src, dst, size] or {{\"src\", \"dst\", \"size\"}}, got {item!r}")


@refuse_malformed("pattern file")
def parse_json_pattern(text: str, source: str = "") -> FilePattern:
    data = loads_strict(text, f"pattern file {source}")
    groups_data = data.get("groups") if isinstance(data, dict) else data
    if not isinstance(groups_data, list) or not groups_data:
        raise UserError(f"pattern file {source}: expected a non-empty list of groups (or {{\"groups\": [...]}})")
    groups = []
    for gi, group in enumerate(groups_data):
        if not isinstance(group, list) or not group:
            raise UserError(f"pattern file {source}: group {gi + 1} must be a non-empty list of transfers")
        groups.append(tuple(_transfer(item, f"pattern file {source} group {gi + 1} transfer {ti + 1}") for ti, item in enumerate(group)))
    return FilePattern(tuple(groups), source)


@refuse_malformed("pattern file")
def parse_csv_pattern(text: str, source: str = "") -> FilePattern:
    groups: list[tuple[FileTransfer, ...]] = []
    current: list[FileTransfer] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            if not raw.strip() and current:
                groups.append(tuple(current))
                current = []
            continue
        cells = [c.strip() for c in line.split(",")]
        if [c.lower() for c in cells[:2]] == ["src", "dst"]:
            continue
        if len(cells) not in (2, 3):
            raise UserError(f"pattern file {source} line {lineno}: expected src,dst[,size], got {line!r}")
        where = f"pattern file {source} line {lineno}"
        current.append(FileTransfer(_endpoint(cells[0], where), _endpoint(cells[1], where),
                                    _size(cells[2] if len(cells) == 3 else None, where)))
    if current:
        groups.append(tuple(current))
    if not groups:
        raise UserError(f"pattern file {source} holds no transfers")
    return FilePattern(tuple(groups), source)


def load_pattern_file(path: str | Path) -> FilePattern:
    path = Path(path)
    text = read_text(path, "pattern file")
    if path.suffix.lower() == ".json":
        return parse_json_pattern(text, str(path))
    return parse_csv_pattern(text, str(path))
