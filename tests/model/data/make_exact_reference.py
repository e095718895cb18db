"""Recorded the exact reference in exact_reference.npz (main at c5269ca, before issue 14 changed the solver).

Kept to show how the stored problems were built; the test reads the stored problems, not this script."""
import time

import numpy as np

from linkscope.model.contention import simulate
from linkscope.model.predict import FabricModel
from linkscope.topology.synthetic import synthetic_topology

out = {}
for name, spec, n, mixed in (("mixed", "fattree:16x8", 500, True), ("equal", "fattree:16x8", 1500, False), ("pcie", "pcie:2x4", 300, True)):
    topo = synthetic_topology(spec)
    m = FabricModel(topo)
    rng = np.random.default_rng(7)
    g = topo.gpu_count
    src = rng.integers(0, g, n)
    dst = rng.integers(0, g - 1, n)
    dst = np.where(dst >= src, dst + 1, dst)
    sizes = np.exp(rng.uniform(np.log(4096), np.log(64*2**20), n)).astype(np.int64) if mixed else np.full(n, 16*2**20)
    p = m.peer_problem(src, dst, sizes, "ce")
    t = time.perf_counter()
    r = simulate(p, rtol=0.0)
    print(name, time.perf_counter()-t, r.events)
    A = p.A.tocsc()
    out.update({f"{name}_indptr": A.indptr, f"{name}_indices": A.indices, f"{name}_data": A.data, f"{name}_shape": np.array(A.shape),
                f"{name}_capacity": p.capacity_gb_per_s, f"{name}_bytes": p.stage_bytes, f"{name}_cap": p.stage_cap_gb_per_s,
                f"{name}_latency": p.stage_latency_s, f"{name}_finish": r.finish_s, f"{name}_rate": r.first_rate_gb_per_s})
np.savez_compressed("tests/model/data/exact_reference.npz", **out)
# a multi-stage case (pageable staged copies: two stages each) through the predict path
topo = synthetic_topology("pcie:2x4")
m = FabricModel(topo)
rng = np.random.default_rng(3)
flows = []
for _k in range(60):
    s = int(rng.integers(0, 8))
    d = int((s + 1 + rng.integers(0, 7)) % 8)
    flows.append(m.stages(s, d, int(np.exp(rng.uniform(np.log(4096), np.log(64*2**20)))), "staged"))
p = m._problem(flows)
r = simulate(p, rtol=0.0)
A = p.A.tocsc()
name = "staged"
out.update({f"{name}_indptr": A.indptr, f"{name}_indices": A.indices, f"{name}_data": A.data, f"{name}_shape": np.array(A.shape),
            f"{name}_capacity": p.capacity_gb_per_s, f"{name}_bytes": p.stage_bytes, f"{name}_cap": p.stage_cap_gb_per_s,
            f"{name}_latency": p.stage_latency_s, f"{name}_finish": r.finish_s, f"{name}_rate": r.first_rate_gb_per_s,
            f"{name}_next": p.stage_next, f"{name}_first": p.flow_first})
np.savez_compressed("tests/model/data/exact_reference.npz", **out)
print("staged", r.events)
