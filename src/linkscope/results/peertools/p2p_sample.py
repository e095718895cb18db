"""p2pBandwidthLatencyTest (the CUDA sample) output as Measurements.

The layout and what each number is, from the sample's source (p2pBandwidthLatencyTest.cu in
../shared/anchors/src/p2pBandwidthLatencyTest: ``main``, ``outputBandwidthMatrix``,
``outputBidirectionalBandwidthMatrix``, ``outputLatencyMatrix``):

* ``Device: i, NAME, pciBusID: ...`` per GPU, ``Device=i CAN|CANNOT Access Peer Device=j``;
* matrices titled ``Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)``,
  ``Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)`` (``P2P Reads`` with
  ``--p2p_read``), ``Bidirectional P2P=Disabled|Enabled Bandwidth Matrix (GB/s)``,
  ``P2P=Disabled|Enabled Latency ... Matrix (us)`` (a ``GPU`` table, then a ``CPU`` one), each a
  ``D\\D`` (or ``GPU``/``CPU``) header of column numbers and one row per GPU, ``%6.02f`` values;
* unidirectional value(i, j): ``cudaMemcpyPeerAsync`` of 40,000,000 ints (160 MB, ``--numElems``
  changes it) x 5 from GPU i to GPU j (writes; reads: j to i) on i's stream; bidirectional: that
  copy and the reverse one at once, both counted; the diagonal is a copy inside GPU i counted as
  read + write (x 2); with ``P2P=Disabled`` peer access is not enabled, so the driver stages
  the copies through host memory: linkscope's ``ce-nopeer``, marked ``peer_access: false`` (the
  verdict then compares it with what the pair gives with peer access, and names the cause);
* latency: one 16-byte ``cudaMemcpyPeerAsync`` (or a kernel with ``--sm_copy``), averaged over
  100, GPU-timed (the ``GPU`` table) and host-timed (``CPU``).
"""
from __future__ import annotations

import re

from ...errors import SchemaError
from ...patterns.methods import CE, CE_NOPEER, CE_READ
from ...userfiles import refuse_malformed
from .common import (
    Collector,
    Lines,
    PeerRun,
    RunContext,
    gpu_index,
    matrix_values,
    unread_line,
)

TOOL = "p2pBandwidthLatencyTest"
DEFAULT_SIZE_BYTES = 40_000_000 * 4  # numElems ints (p2pBandwidthLatencyTest.cu main)
LATENCY_SIZE_BYTES = 16  # numElems = 4 ints (outputLatencyMatrix)
_TITLE = re.compile(r"^(Unidirectional |Bidirectional )?P2P=(Disabled|Enabled) (Bandwidth|Latency)(?: \(P2P (Writes|Reads)\))?"
                    r"(?: Bandwidth)? Matrix \((GB/s|us)\)\s*$")
_DEVICE = re.compile(r"^Device:\s*(\d+),\s*(.*?),\s*pciBusID")


def looks_like(text: str) -> bool:
    head = text[:20000]
    return "P2P (Peer-to-Peer) GPU Bandwidth Latency Test" in head or \
        bool(re.search(r"^\s*(?:Unidirectional |Bidirectional )?P2P=(?:Enabled|Disabled) (?:Bandwidth|Latency)", head, re.M))


@refuse_malformed("p2pBandwidthLatencyTest output")
def parse_text(text: str, source: str, size_bytes: int | None = None) -> PeerRun:
    lines = Lines(text, source)
    size_from = "option" if size_bytes is not None else "default (numElems 40,000,000 ints)"
    size_bytes = size_bytes or DEFAULT_SIZE_BYTES
    incomplete: list[str] = []
    rows_seen = 0
    out = Collector(TOOL, "", source)
    gpus: list[str] = []
    title: re.Match | None = None
    header: list[int] | None = None
    timer = "GPU"
    access: dict[tuple[int, int], bool] = {}
    for n, raw in lines:
        line = raw.strip()
        m = _DEVICE.match(line)
        if m:
            if int(m.group(1)) == len(gpus):  # a second run appended to the file lists its devices again
                gpus.append(m.group(2))
            continue
        m = re.match(r"^Device=(\d+) (CAN|CANNOT) Access Peer Device=(\d+)", line)
        if m:
            access[(int(m.group(1)), int(m.group(3)))] = m.group(2) == "CAN"
            continue
        m = _TITLE.match(line)
        if m:
            if header is not None and rows_seen < len(header):
                incomplete.append(f"the matrix before line {n} has {rows_seen} of its {len(header)} rows")
            title, header, timer = m, None, "GPU"
            continue
        if line.startswith("P2P Connectivity Matrix") or line.startswith("NOTE:"):
            title, header = None, None
            continue
        if not line:
            continue
        if title is None:
            if re.match(r"^\d+(\s+[\d.]+){2,}$", line):
                out.skip(n, "a matrix row before any matrix title (the paste starts inside a matrix)")
            continue
        tokens = line.split()
        if tokens[0] in ("D\\D", "GPU", "CPU"):
            if header is not None and rows_seen < len(header):
                incomplete.append(f"the matrix before line {n} has {rows_seen} of its {len(header)} rows")
            header = [gpu_index(t, lines, n) for t in tokens[1:]]
            timer = tokens[0] if tokens[0] != "D\\D" else "GPU"
            rows_seen = 0
            continue
        if header is None or not tokens[0].isdigit():
            continue
        i = gpu_index(tokens[0], lines, n)
        cells = tokens[1:]
        read = matrix_values(out, lines, n, cells, len(header), rates=title.group(5) == "GB/s", what=line_title(title))
        if read is None:
            if len(cells) != len(header):
                incomplete.append(f"a matrix row is cut (line {n})")
            continue
        values = [v if v is not None else 0.0 for v in read]  # the sample prints no N/A
        rows_seen += 1
        bi = title.group(1) == "Bidirectional "
        enabled = title.group(2) == "Enabled"
        reads = title.group(4) == "Reads"
        latency = title.group(3) == "Latency"
        for j, value in zip(header, values):
            peer = enabled and access.get((i, j), enabled)
            extra = {"test": line_title(title), "peer_access": peer}
            if enabled and not peer:  # "Device=i CANNOT Access Peer Device=j": the sample copies without peer access
                extra["peer_access_note"] = f"the output says Device={i} CANNOT Access Peer Device={j}"
            if latency:
                kind = "copy" if timer == "GPU" else "copy (host-timed)"
                src, dst = (j, i) if reads else (i, j)
                if i == j:
                    continue  # a copy inside one GPU: no pair latency
                out.add(n, src, dst, _method(peer, reads), "latency", LATENCY_SIZE_BYTES, latency_us=value,
                        extra={**extra, "latency_kind": kind})
                continue
            if i == j:  # counted as read + write (x 2): the local copy rate is half of it
                out.add(n, i, i, "local", "local", size_bytes, gb_per_s=value,
                        extra={**extra, "counts_read_and_write": True})
                continue
            src, dst = (j, i) if reads else (i, j)
            method = _method(peer, reads)
            if bi:
                out.add(n, i, j, method, "matrix", size_bytes, gb_per_s=value, direction="bi", scope="total",
                        extra=extra)
            else:
                out.add(n, src, dst, method, "matrix", size_bytes, gb_per_s=value, extra=extra)
    if header is not None and rows_seen < len(header):
        incomplete.append(f"the last matrix has {rows_seen} of its {len(header)} rows")
    out.cut(lines)
    if lines.cut_line is not None:
        incomplete.append("the last line has no final newline (cut)")
    if not out.items:
        if out.unread:
            raise SchemaError(f"{source}: no number of it could be read; {unread_line(out.unread)}")
        raise SchemaError(f"{source}: no p2pBandwidthLatencyTest matrix in it",
                          hint="pass the output of the CUDA sample p2pBandwidthLatencyTest")
    notes = []
    cannot = sorted(pair for pair, ok in access.items() if not ok)
    if cannot:
        notes.append(f"{len(cannot)} GPU pairs CANNOT access each other as peers (e.g. {cannot[0][0]}->{cannot[0][1]}): "
                     "their P2P=Enabled numbers are copies without peer access (staged through host memory)")
    return PeerRun(TOOL, "", source, tuple(out.items), tuple(gpus), {}, tuple(notes), unread=tuple(out.unread),
                   complete=not incomplete, incomplete="; ".join(incomplete),
                   run_context=RunContext(default_size_bytes=size_bytes, size_from=size_from, launcher=lines.launcher))


def _method(enabled: bool, reads: bool) -> str:
    """``cudaMemcpyPeerAsync`` with peer access enabled is linkscope's ``ce`` (``ce-read`` when the
    destination issues it); without peer access the driver stages it through host memory: ``ce-nopeer``."""
    if not enabled:
        return CE_NOPEER.key
    return CE_READ.key if reads else CE.key


def line_title(title: re.Match) -> str:
    return title.group(0).strip()
