#!/usr/bin/env bash
# Broken-node recordings on 2 x H200 (nvidia-h200-x2), for issue 33's "low with the right cause >= 90%" bar.
# docs/runs/h200x2-2026-11-28b/call1/broken already holds a first set (P2P off, P2P+SHM off, 2 channels, a noisy
# neighbour: its survey predates the background check). This script adds what that set lacks: a control on the same
# lease, the transport NCCL used (NCCL_DEBUG lines), all_gather on sockets, a survey WITH the background check under
# the neighbour (its counters are what names a steady neighbour), and the stencil beside its baseline.
# Prepared on branch verdicts3 and NOT run there: the lead runs it and commits $r (the tarball) under
# docs/runs/h200x2-broken-DATE/. Same conventions as docs/runs/h200x2-2026-11-28/visit1.sh (bench/device_steps.sh:
# step FILE LIMIT CMD, everything under $r, a budget), from the repository root with .anchors and .whl carried:
#   BUDGET_S=570 bash docs/runs/broken-commands.sh
#
# What each output is, and what `linkscope check` should say on it (the tests that pin the causes:
# tests/judge/test_broken_paths.py; the causes are Judgement.cause_key):
#   broken/topo.json, broken/topo-m.txt       this lease's topology (live) and nvidia-smi topo -m: check runs --from it
#   broken/control/OP_g0.txt                  nccl-tests as the healthy visits ran them (-g 2, eager): ok (the control)
#   broken/nccl-shm/OP_g0.txt                 NCCL_P2P_DISABLE=1: NCCL moves through host memory (SHM transport):
#                                             low, cause collective-no-p2p ("NCCL ran without peer-to-peer")
#   broken/nccl-net/OP_g0.txt                 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1: NCCL's network transport inside
#                                             the node (sockets; IB off): low, cause collective-network-transport
#   broken/nccl-*/transport.txt               one NCCL_DEBUG=INFO all_reduce at 64 MiB: the "via SHM / NET/Socket"
#                                             lines that prove which transport ran (not judged; evidence)
#   broken/noisy/load.txt                     the noisy neighbour: nvbandwidth's CE copies both ways between GPUs 0 and 1,
#                                             1 GiB back to back, started before and stopped after the two below
#   broken/noisy/nvbandwidth-selected.txt     nvbandwidth (visit1's test list) under that load: the 0<->1 copies low,
#                                             cause link-degraded-or-shared (nvbandwidth prints one number per copy)
#   broken/noisy/survey.json                  linkscope survey under that load: the pair low, cause shared-link (its
#                                             repetitions spread while the load comes and goes)
#   broken/stencil/stencil_base.json          bench stencil 2x1 without emulation (the baseline of the same lease)
#   broken/stencil/stencil_slow.json          the same with --emulate-slow-pairs 0-1: slower than the baseline. NOTE:
#                                             `check` does not judge stencil records yet ("method ... is not
#                                             modelled"): compare to the baseline by hand until it does
#   broken/check/NAME.txt, NAME.json          `linkscope check` of each output above, on this lease (verdict lines and
#                                             the check record: the right-cause bar is counted from the .json files)
# Every output is one file; a step that runs out of budget is listed as SKIP in $r/steps.txt.
set -uo pipefail
source bench/device_steps.sh
device_begin broken 570 broken/control broken/nccl-shm broken/nccl-net broken/noisy broken/stencil broken/check
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD/src:/tmp/site
{
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort | uniq -c)"
nvidia-smi topo -m > "$r/broken/topo-m.txt" 2>&1
step broken/topo.txt 30 python3 -m linkscope topo -o "$r/broken/topo.json"
[ -x /tmp/anchors/bin/nvbandwidth ] || step build-anchors.log 150 env MPICC=/bin/false bash .anchors/build.sh /tmp/anchors
B=/tmp/anchors/bin; [ -f /tmp/anchors/env.sh ] && source /tmp/anchors/env.sh

# 1. NCCL's transports: the control, SHM through host memory, sockets inside the node (one process, -g 2, eager)
for bin in all_reduce all_gather sendrecv; do
  step broken/control/${bin}_g0.txt 40 $B/${bin}_perf -b 8 -e 512M -f 4 -g 2
  step broken/nccl-shm/${bin}_g0.txt 60 env NCCL_P2P_DISABLE=1 $B/${bin}_perf -b 8 -e 512M -f 4 -g 2
  step broken/nccl-net/${bin}_g0.txt 90 env NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1 $B/${bin}_perf -b 8 -e 512M -f 4 -g 2
done
step broken/nccl-shm/transport.txt 30 env NCCL_P2P_DISABLE=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT $B/all_reduce_perf -b 64M -e 64M -g 2
step broken/nccl-net/transport.txt 30 env NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET $B/all_reduce_perf -b 64M -e 64M -g 2

# 2. A noisy neighbour: copies both ways between GPUs 0 and 1 while nvbandwidth and the survey measure the same GPUs.
#    The load is this script's own child (its pid kept), stopped by that pid; timeout(1) bounds it if the script dies.
#    The load: nvbandwidth's CE copies both ways between GPUs 0 and 1 (1 GiB, 16 copies a sample, 100000 samples,
#    i.e. far longer than needed; -s: no data check), a compiled loop with no interpreter start-up between samples.
timeout -k 5 400 $B/nvbandwidth -t device_to_device_bidirectional_memcpy_write_ce -b 1024 -i 100000 -s \
  > "$r/broken/noisy/load.txt" 2>&1 &
load=$!
sleep 5  # the load's CUDA start-up, so that it copies before the first measurement
step broken/noisy/nvbandwidth-selected.txt 90 $B/nvbandwidth -t device_to_device_memcpy_write_ce device_to_device_memcpy_read_ce device_to_device_bidirectional_memcpy_write_ce device_to_device_memcpy_write_sm device_to_device_memcpy_read_sm host_to_device_memcpy_ce device_to_host_memcpy_ce device_local_copy
step broken/noisy/survey.txt 150 python3 -m linkscope survey -o "$r/broken/noisy/survey.json" --no-report
kill "$load" 2>/dev/null; wait "$load" 2>/dev/null
echo "noisy load stopped (pid $load)" | tee -a "$r/steps.txt"

# 3. A slow pair emulated by linkscope's stencil, with the baseline of the same lease
step broken/stencil/stencil_base.txt 60 python3 -m linkscope bench stencil --dims 2 --mapping auto --sizes 64KiB,1MiB,16MiB --json "$r/broken/stencil/stencil_base.json"
step broken/stencil/stencil_slow.txt 60 python3 -m linkscope bench stencil --dims 2 --mapping auto --emulate-slow-pairs 0-1 --sizes 64KiB,1MiB,16MiB --json "$r/broken/stencil/stencil_slow.json"

# 4. check on this lease (cheap; the same commands can be re-run anywhere with --from broken/topo.json)
for f in control/all_reduce_g0.txt control/all_gather_g0.txt control/sendrecv_g0.txt \
         nccl-shm/all_reduce_g0.txt nccl-shm/all_gather_g0.txt nccl-shm/sendrecv_g0.txt \
         nccl-net/all_reduce_g0.txt nccl-net/all_gather_g0.txt nccl-net/sendrecv_g0.txt \
         noisy/nvbandwidth-selected.txt noisy/survey.json stencil/stencil_base.json stencil/stencil_slow.json; do
  [ -s "$r/broken/$f" ] || continue
  name=$(echo "$f" | tr '/.' '__')
  step broken/check/$name.txt 60 python3 -m linkscope check "$r/broken/$f" --from "$r/broken/topo.json" --json "$r/broken/check/$name.json"
done
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/broken.log"
device_end broken
