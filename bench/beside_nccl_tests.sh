#!/usr/bin/env bash
# bench nccl beside nccl-tests on the GPUs of this machine, launch mode for launch mode (issue 36's bar): nccl-tests
# built in the same call from .anchors (plain and MPI=1, against the NCCL CuPy loads), then for every op
#   graph/       one process drives every GPU, CUDA graphs (nccl-tests -g N -G 20 | bench nccl --cuda-graph 20)
#   mpi_graph/   one process per GPU under mpirun -n N (nccl-tests -g 1 -G 20 | bench nccl --cuda-graph 20)
#   eager_sets/  one process, eager: nccl-tests run SETS times beside one bench nccl --comm-sets SETS
#   mpi_eager_sets/  the same, one process per GPU
# in ROUNDS paired rounds (order swapped every round). The host cost of a small eager launch drifts in time
# (docs/benchmarks.md, "the eager draw in time"): an eager row needs many sets, a graph row few rounds. At the end
# bench/beside_peers.py prints every table (ratio nccl-tests time / linkscope time, median over rounds) into
# $OUT/tables.md; everything else is in $OUT/beside.tar.gz. On one GPU the per-GPU modes are skipped.
#   OPS="allreduce allgather" ROUNDS=2 SETS=6 BUDGET_S=560 bash bench/beside_nccl_tests.sh
# Environment: OPS (default every op), ROUNDS (2), SETS (6), GRAPH_SIZES / EAGER_SIZES (nccl-tests -b/-e/-f
# triples; defaults 8 B-1 GiB x4 and 16 B-4 MiB x4), MODES (default "graph mpi_graph eager_sets mpi_eager_sets"),
# BUDGET_S (560: steps past it are skipped, each with its reason in steps.txt). Needs .anchors (the peers' sources,
# carried) and NCCL_NVLS_ENABLE stays 0.
set -uo pipefail
source bench/device_steps.sh
modes=${MODES:-graph mpi_graph eager_sets mpi_eager_sets}
device_begin beside 560 $modes
device_hello
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$ngpu" -ge 1 ] || { echo "no GPU here: nothing to measure" | tee "$r/steps.txt"; device_end beside; exit 0; }
ops=${OPS:-allreduce allgather reduce_scatter alltoall sendrecv broadcast reduce gather scatter}
rounds=${ROUNDS:-2}; sets=${SETS:-6}
read -r gb ge gf <<< "${GRAPH_SIZES:-8 1G 4}"
read -r eb ee ef <<< "${EAGER_SIZES:-16 4M 4}"
sizes() {  # bench nccl's --sizes for nccl-tests' -b B -e E -f F (both tools then run the same sizes)
  python3 -c 'import sys; b, e, f = (int(float(x[:-1]) * {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[x[-1]]) if x[-1] in "KMG" else int(x) for x in sys.argv[1:4]); out = []
while b <= e: out.append(str(b)); b *= f
print(",".join(out))' "$1" "$2" "$3"
}
gs=$(sizes "$gb" "$ge" "$gf"); es=$(sizes "$eb" "$ee" "$ef")
# an array, not a function: step runs its command under timeout(1), which cannot run shell functions
mpirun_n=(mpirun -n "$ngpu" --bind-to none -x PYTHONPATH -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE)
{
echo "== $ngpu GPU(s); ops: $ops; rounds $rounds; sets $sets; modes: $modes"
build_nccl_tests
wait_nccl_tests
for k in $(seq 1 "$rounds"); do
  for op in $ops; do
    bin=$(nccl_tests_bin "$op")
    for mode in $modes; do
      case $mode in
        graph)
          nt_run() { step graph/nt_${op}_r$k.txt 60 $B/$bin -b $gb -e $ge -f $gf -g $ngpu -G 20; }
          ls_run() { step graph/ls_${op}_r$k.txt 120 python3 -m linkscope bench nccl --op $op --sizes $gs --cuda-graph 20 --json "$r/graph/ls_${op}_r$k.json"; } ;;
        mpi_graph)
          [ "$ngpu" -ge 2 ] || { echo "SKIP mpi_graph (one GPU)" >> "$r/steps.txt"; continue; }
          nt_run() { step mpi_graph/nt_${op}_r$k.txt 60 "${mpirun_n[@]}" $M/$bin -b $gb -e $ge -f $gf -g 1 -G 20; }
          ls_run() { step mpi_graph/ls_${op}_r$k.txt 120 "${mpirun_n[@]}" python3 -m linkscope bench nccl --op $op --sizes $gs --cuda-graph 20 --json "$r/mpi_graph/ls_${op}_r$k.json"; } ;;
        eager_sets)
          nt_run() { for j in $(seq 1 "$sets"); do step eager_sets/nt_${op}_r${k}_s$j.txt 30 $B/$bin -b $eb -e $ee -f $ef -g $ngpu; done; }
          ls_run() { step eager_sets/ls_${op}_r$k.txt 120 python3 -m linkscope bench nccl --op $op --sizes $es --cuda-graph 0 --comm-sets $sets --json "$r/eager_sets/ls_${op}_r$k.json"; } ;;
        mpi_eager_sets)
          [ "$ngpu" -ge 2 ] || { echo "SKIP mpi_eager_sets (one GPU)" >> "$r/steps.txt"; continue; }
          nt_run() { for j in $(seq 1 "$sets"); do step mpi_eager_sets/nt_${op}_r${k}_s$j.txt 30 "${mpirun_n[@]}" $M/$bin -b $eb -e $ee -f $ef -g 1; done; }
          ls_run() { step mpi_eager_sets/ls_${op}_r$k.txt 120 "${mpirun_n[@]}" python3 -m linkscope bench nccl --op $op --sizes $es --cuda-graph 0 --comm-sets $sets --json "$r/mpi_eager_sets/ls_${op}_r$k.json"; } ;;
        *) echo "SKIP $mode (unknown mode)" >> "$r/steps.txt"; continue ;;
      esac
      paired "$k" nt_run ls_run
    done
  done
done
python3 bench/beside_peers.py "$r" > "$r/tables.md" 2>&1; cp "$r/tables.md" "$out/"
cat "$r/tables.md"
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/beside.log"
device_end beside
