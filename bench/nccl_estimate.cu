// NCCL's own time estimate per collective and size (ncclGroupSimulateEnd, NCCL >= 2.22), beside which the
// twin's prediction and the measurement are put (issue 22). One process drives every visible GPU, as
// nccl-tests -g N does; sizes are nccl-tests' S (float32 counts), ops and per-rank counts as nccl-tests.
//   nvcc -O2 bench/nccl_estimate.cu -I$NCCL/include -L$NCCL/lib -lnccl -o nccl_estimate
//   ./nccl_estimate MIN_BYTES MAX_BYTES      -> "op size_bytes estimated_us" rows (env NCCL_ALGO/NCCL_PROTO honoured)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include <nccl.h>

#define CK(x) do { cudaError_t ck_ = (x); if (ck_ != cudaSuccess) { fprintf(stderr, "cuda %s at %d\n", cudaGetErrorString(ck_), __LINE__); return 1; } } while (0)
#define NK(x) do { ncclResult_t nk_ = (x); if (nk_ != ncclSuccess) { fprintf(stderr, "nccl %s at %d\n", ncclGetErrorString(nk_), __LINE__); return 1; } } while (0)

int main(int argc, char** argv) {
  size_t lo = argc > 1 ? strtoull(argv[1], 0, 10) : 8, hi = argc > 2 ? strtoull(argv[2], 0, 10) : (1ull << 30);
  int n = 0; CK(cudaGetDeviceCount(&n));
  std::vector<ncclComm_t> comms(n); std::vector<int> devs(n); std::vector<cudaStream_t> st(n);
  std::vector<void*> sb(n), rb(n);
  for (int i = 0; i < n; i++) devs[i] = i;
  NK(ncclCommInitAll(comms.data(), n, devs.data()));
  for (int i = 0; i < n; i++) { CK(cudaSetDevice(i)); CK(cudaStreamCreate(&st[i])); CK(cudaMalloc(&sb[i], hi)); CK(cudaMalloc(&rb[i], hi)); }
  int ver = 0; ncclGetVersion(&ver);
  printf("# nccl %d, %d GPUs, NCCL_ALGO=%s NCCL_PROTO=%s\n", ver, n, getenv("NCCL_ALGO") ? getenv("NCCL_ALGO") : "", getenv("NCCL_PROTO") ? getenv("NCCL_PROTO") : "");
  printf("# op size_bytes estimated_us\n");
  const char* ops[] = {"allreduce", "allgather", "reduce_scatter", "broadcast", "reduce", "sendrecv", "alltoall"};
  for (const char* op : ops) {
    for (size_t S = lo; S <= hi; S *= 2) {
      size_t count = S / 4, chunk = S / 4 / n;
      if (chunk == 0 && (!strcmp(op, "allgather") || !strcmp(op, "reduce_scatter") || !strcmp(op, "alltoall"))) continue;
      ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
      NK(ncclGroupStart());
      for (int r = 0; r < n; r++) {
        if (!strcmp(op, "allreduce")) NK(ncclAllReduce(sb[r], rb[r], count, ncclFloat, ncclSum, comms[r], st[r]));
        else if (!strcmp(op, "allgather")) NK(ncclAllGather(sb[r], rb[r], chunk, ncclFloat, comms[r], st[r]));
        else if (!strcmp(op, "reduce_scatter")) NK(ncclReduceScatter(sb[r], rb[r], chunk, ncclFloat, ncclSum, comms[r], st[r]));
        else if (!strcmp(op, "broadcast")) NK(ncclBroadcast(sb[r], rb[r], count, ncclFloat, 0, comms[r], st[r]));
        else if (!strcmp(op, "reduce")) NK(ncclReduce(sb[r], rb[r], count, ncclFloat, ncclSum, 0, comms[r], st[r]));
        else if (!strcmp(op, "sendrecv")) {
          NK(ncclSend(sb[r], count, ncclFloat, (r + 1) % n, comms[r], st[r]));
          NK(ncclRecv(rb[r], count, ncclFloat, (r - 1 + n) % n, comms[r], st[r]));
        } else {  // alltoall: grouped send/recv of S/n to every peer, as nccl-tests
          for (int p = 0; p < n; p++) {
            NK(ncclSend((char*)sb[r] + p * chunk * 4, chunk, ncclFloat, p, comms[r], st[r]));
            NK(ncclRecv((char*)rb[r] + p * chunk * 4, chunk, ncclFloat, p, comms[r], st[r]));
          }
        }
      }
      ncclResult_t res = ncclGroupSimulateEnd(&info);
      if (res != ncclSuccess) printf("%s %zu error:%s\n", op, S, ncclGetErrorString(res));
      else printf("%s %zu %.3f\n", op, S, info.estimatedTime);
    }
  }
  for (int i = 0; i < n; i++) ncclCommDestroy(comms[i]);
  return 0;
}
