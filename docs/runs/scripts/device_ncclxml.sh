#!/usr/bin/env bash
# NCCL topology XML round trip on one GPU (about 60 s): NCCL dumps its topology while `bench nccl`
# runs, linkscope reads the dump, exports it again, and NCCL runs a second time on the exported file
# (NCCL_TOPO_FILE). Prints a short table; writes ONE file, $OUT/ncclxml.json, holding the dump, the
# export, linkscope's notes and NCCL's INFO lines that say the file was loaded and which rings/trees
# it chose. Run from the repo root: bash bench/device_ncclxml.sh
set -uo pipefail
export PYTHONPATH=src NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
out=${OUT:-/tmp/linkscope-out}; mkdir -p "$out"
work=$(mktemp -d /tmp/ncclxml.XXXXXX)
gpus=${LINKSCOPE_NCCLXML_GPUS:-0}
bench=(python3 -m linkscope bench nccl --op allreduce --gpus "$gpus" --sizes 1MiB -n 5 -w 2 --runs 1)

command -v lstopo >/dev/null && timeout 20 lstopo --of xml "$work/lstopo.xml" 2>/dev/null  # hwloc fixture, if installed
echo "== 1. bench nccl with NCCL_TOPO_DUMP_FILE (GPUs $gpus)"
NCCL_TOPO_DUMP_FILE="$work/dump.xml" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH,ENV \
  timeout 60 "${bench[@]}" >"$work/run1.log" 2>&1; echo "rc=$?" >>"$work/run1.log"
tail -3 "$work/run1.log"
echo "== 2. linkscope topo --from dump.xml"
timeout 30 python3 -m linkscope topo --from "$work/dump.xml" >"$work/import.log" 2>&1; echo "rc=$?" >>"$work/import.log"
head -8 "$work/import.log"
echo "== 3. linkscope topo --from dump.xml --export nccl-xml -o exported.xml"
timeout 30 python3 -m linkscope topo --from "$work/dump.xml" --export nccl-xml -o "$work/exported.xml" \
  >"$work/export.log" 2>&1; echo "rc=$?" >>"$work/export.log"
cat "$work/export.log"
echo "== 4. bench nccl with NCCL_TOPO_FILE=exported.xml"
NCCL_TOPO_FILE="$work/exported.xml" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH,ENV \
  timeout 60 "${bench[@]}" >"$work/run2.log" 2>&1; echo "rc=$?" >>"$work/run2.log"
tail -3 "$work/run2.log"

python3 - "$work" "$out/ncclxml.json" <<'PY'
import datetime, json, re, subprocess, sys
from pathlib import Path
work, dest = Path(sys.argv[1]), Path(sys.argv[2])
def text(name):
    p = work / name
    return p.read_text(errors="replace") if p.exists() else None
pattern = re.compile(r"TOPO_FILE|TOPO_DUMP|Loading topology|Loading unnamed|XML|topology file|Channel \d+/\d+|"
                     r"Trees? ?\[|Pattern \d+|Ring \d+|NVLS|version|Init COMPLETE|WARN", re.I)
def nccl_lines(log):
    return [l for l in (log or "").splitlines() if " NCCL " in l and pattern.search(l)][:120]
def rc(log):
    m = re.findall(r"^rc=(\d+)$", log or "", re.M)
    return int(m[-1]) if m else None
try:
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,pci.bus_id", "--format=csv,noheader"],
                         capture_output=True, text=True, timeout=20).stdout.strip().splitlines()
except Exception as exc:  # noqa: BLE001
    gpu = [f"nvidia-smi failed: {exc}"]
run1, run2 = text("run1.log"), text("run2.log")
result = {
    "format": "linkscope.device-ncclxml", "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(),
    "gpus": gpu,
    "run1_dump": {"rc": rc(run1), "nccl_lines": nccl_lines(run1), "tail": (run1 or "").splitlines()[-15:]},
    "dump_xml": text("dump.xml"),
    "import": {"rc": rc(text("import.log")), "log": text("import.log")},
    "export": {"rc": rc(text("export.log")), "log": text("export.log")},
    "exported_xml": text("exported.xml"),
    "lstopo_xml": text("lstopo.xml"),
    "run2_topo_file": {"rc": rc(run2), "nccl_lines": nccl_lines(run2), "tail": (run2 or "").splitlines()[-15:]},
}
loaded = [l for l in result["run2_topo_file"]["nccl_lines"] if re.search(r"Loading topology|TOPO_FILE", l)]
result["verdict"] = {"dumped": bool(result["dump_xml"]), "imported": result["import"]["rc"] == 0,
                     "exported": result["export"]["rc"] == 0, "nccl_loaded_export": bool(loaded),
                     "run2_ok": result["run2_topo_file"]["rc"] == 0}
dest.write_text(json.dumps(result, indent=1))
print("\n== summary")
for k, v in result["verdict"].items():
    print(f"  {k:20s} {v}")
for l in loaded + [l for l in result["run2_topo_file"]["nccl_lines"] if re.search(r"Channel|Tree|Pattern", l)][:8]:
    print("  " + l.strip()[:160])
print(f"wrote {dest}")
PY
rm -rf "$work"
