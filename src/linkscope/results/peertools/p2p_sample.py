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
from .common import Collector, Lines, PeerRun, check_rate, gpu_index, number

TOOL = "p2pBandwidthLatencyTest"
DEFAULT_SIZE_BYTES = 40_000_000 * 4  # numElems ints (p2pBandwidthLatencyTest.cu main)
LATENCY_SIZE_BYTES = 16  # numElems = 4 ints (outputLatencyMatrix)
_TITLE = re.compile(r"^(Unidirectional |Bidirectional )?P2P=(Disabled|Enabled) (Bandwidth|Latency)(?: \(P2P (Writes|Reads)\))?"
                    r"(?: Bandwidth)? Matrix \((GB/s|us)\)\s*$")
_DEVICE = re.compile(r"^Device:\s*(\d+),\s*(.*?),\s*pciBusID")


def looks_like(text: str) -> bool:
    head = text[:20000]
    return "P2P (Peer-to-Peer) GPU Bandwidth Latency Test" in head or bool(re.search(r"^Unidirectional P2P=", head, re.M))


@refuse_malformed("p2pBandwidthLatencyTest output")
def parse_text(text: str, source: str, size_bytes: int = DEFAULT_SIZE_BYTES) -> PeerRun:
    lines = Lines(text, source)
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
            title, header, timer = m, None, "GPU"
            continue
        if line.startswith("P2P Connectivity Matrix") or line.startswith("NOTE:"):
            title, header = None, None
            continue
        if title is None or not line:
            continue
        tokens = line.split()
        if tokens[0] in ("D\\D", "GPU", "CPU"):
            header = [gpu_index(t, lines, n) for t in tokens[1:]]
            timer = tokens[0] if tokens[0] != "D\\D" else "GPU"
            continue
        if header is None or not tokens[0].isdigit():
            continue
        i = gpu_index(tokens[0], lines, n)
        cells = tokens[1:]
        if len(cells) != len(header):
            raise lines.error(n, f"{len(cells)} values under {len(header)} columns")
        bi = title.group(1) == "Bidirectional "
        enabled = title.group(2) == "Enabled"
        reads = title.group(4) == "Reads"
        latency = title.group(3) == "Latency"
        for j, cell in zip(header, cells):
            value = number(cell, lines, n)
            extra = {"test": line_title(title), "peer_access": enabled and access.get((i, j), enabled)}
            if latency:
                kind = "copy" if timer == "GPU" else "copy (host-timed)"
                src, dst = (j, i) if reads else (i, j)
                if i == j:
                    continue  # a copy inside one GPU: no pair latency
                out.add(n, src, dst, _method(enabled, reads), "latency", LATENCY_SIZE_BYTES, latency_us=value,
                        extra={**extra, "latency_kind": kind})
                continue
            check_rate(value, lines, n)
            if i == j:  # counted as read + write (x 2): the local copy rate is half of it
                out.add(n, i, i, "local", "local", size_bytes, gb_per_s=value,
                        extra={**extra, "counts_read_and_write": True})
                continue
            src, dst = (j, i) if reads else (i, j)
            method = _method(enabled, reads)
            if bi:
                out.add(n, i, j, method, "matrix", size_bytes, gb_per_s=value, direction="bi", scope="total",
                        extra=extra)
            else:
                out.add(n, src, dst, method, "matrix", size_bytes, gb_per_s=value, extra=extra)
    if not out.items:
        raise SchemaError(f"{source}: no p2pBandwidthLatencyTest matrix in it",
                          hint="pass the output of the CUDA sample p2pBandwidthLatencyTest")
    return PeerRun(TOOL, "", source, tuple(out.items), tuple(gpus))


def _method(enabled: bool, reads: bool) -> str:
    """``cudaMemcpyPeerAsync`` with peer access enabled is linkscope's ``ce`` (``ce-read`` when the
    destination issues it); without peer access the driver stages it through host memory: ``ce-nopeer``."""
    if not enabled:
        return CE_NOPEER.key
    return CE_READ.key if reads else CE.key


def line_title(title: re.Match) -> str:
    return title.group(0).strip()
