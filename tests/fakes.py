"""A deterministic TransferEngine over a Topology, for tests without hardware.

Each transfer runs at ``efficiency`` × the route's theoretical bandwidth (50 GB/s where the topology
gives none: host ends without a CPU, local copies), divided by how many measured transfers share
its source or destination in the plan (a crude contention rule). Repetition k takes
``(1 + jitter * ((k % 3) - 1))`` times the nominal time, so statistics are not degenerate but stay
tight. Hooks: ``fail_on(plan)`` raises RuntimeError for matching plans, ``interrupt_after_runs``
raises KeyboardInterrupt on the run call after that many, ``waive(plan)`` returns a reason,
``bad_data(plan)`` makes the data check fail.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from linkscope.engines.base import LATENCY_KINDS, EngineCapabilities, GroupResult, MethodInfo, TransferTiming
from linkscope.patterns.methods import METHODS as METHOD_CATALOGUE
from linkscope.patterns.plan import HOST, TransferPlan
from linkscope.topology import query
from linkscope.topology.model import Topology

GiB = 1024**3


class FakeEngine:
    name = "fake"

    def __init__(
        self,
        topology: Topology,
        *,
        methods: Sequence[MethodInfo] = METHOD_CATALOGUE,
        free_bytes: int = 80 * GiB,
        efficiency: float = 0.9,
        jitter: float = 0.002,
        provenance: str = "measured",
        latency_kinds: Sequence[str] = LATENCY_KINDS,
        fail_on: Callable[[TransferPlan], bool] | None = None,
        interrupt_after_runs: int | None = None,
        waive: Callable[[TransferPlan], str | None] | None = None,
        bad_data: Callable[[TransferPlan], bool] | None = None,
        slow: Callable[[TransferPlan], float] | None = None,
    ) -> None:
        self.topology = topology
        self.methods = tuple(methods)
        self.free_bytes = free_bytes
        self.efficiency = efficiency
        self.jitter = jitter
        self.provenance = provenance
        self.latency_kinds = tuple(latency_kinds)
        self.fail_on = fail_on
        self.interrupt_after_runs = interrupt_after_runs
        self.waive = waive
        self.bad_data = bad_data
        self.slow = slow
        self.runs: list[tuple[TransferPlan, int, int, bool]] = []
        self.latency_calls: list[tuple[str, object, object]] = []
        self.closed = False
        self._rep = 0

    def capabilities(self) -> EngineCapabilities:
        return EngineCapabilities(name=self.name, provenance=self.provenance, methods=self.methods,
                                  latency_kinds=self.latency_kinds)

    def gpu_count(self) -> int:
        return self.topology.gpu_count

    def free_memory_bytes(self, gpu: int) -> int:
        return self.free_bytes

    def waiver(self, plan: TransferPlan) -> str | None:
        return self.waive(plan) if self.waive else None

    def _nominal_gb_per_s(self, src, dst) -> float:
        if src == dst or HOST in (src, dst):
            return 50.0
        return query.theoretical_gb_per_s(self.topology, src, dst)

    def run(self, plan: TransferPlan, reps: int, *, warmup: int, verify: bool, chunk_bytes: int | None = None) -> GroupResult:
        if self.interrupt_after_runs is not None and len(self.runs) >= self.interrupt_after_runs:
            raise KeyboardInterrupt
        self.runs.append((plan, reps, warmup, verify))
        if self.fail_on is not None and self.fail_on(plan):
            raise RuntimeError(f"fake failure on {plan.label}")
        measured = [t for t in plan.transfers if t.role == "measured"]
        timings = []
        per_rep_max = [0.0] * reps
        for t in plan.transfers:
            share = max(sum(1 for u in measured if u.dst == t.dst), sum(1 for u in measured if u.src == t.src), 1)
            rate = self._nominal_gb_per_s(t.src, t.dst) * self.efficiency / share
            if self.slow is not None:
                rate *= self.slow(plan)
            nominal_s = t.size_bytes / (rate * 1e9)
            elapsed = []
            for k in range(reps):
                e = nominal_s * (1 + self.jitter * (((self._rep + k) % 3) - 1))
                elapsed.append(e)
                per_rep_max[k] = max(per_rep_max[k], e)
            verified = None if not verify else not (self.bad_data is not None and self.bad_data(plan))
            timings.append(TransferTiming(tuple(elapsed), t.size_bytes, verified))
        self._rep += reps
        return GroupResult(tuple(timings), tuple(per_rep_max))

    def latency_us(self, kind: str, src, dst, *, method: str | None, size_bytes: int, reps: int, warmup: int) -> Sequence[float]:
        self.latency_calls.append((kind, src, dst))
        base = {"remote-read": 0.8, "flag-pingpong": 1.5, "copy": 2.5, "host-read": 1.2}[kind]
        if isinstance(src, int) and isinstance(dst, int) and query.pair_level(self.topology, src, dst).family != "NV":
            base *= 2
        return [base * (1 + 0.01 * (k % 3)) for k in range(reps)]

    def close(self) -> None:
        self.closed = True
