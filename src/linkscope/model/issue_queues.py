"""What the issuing GPU does to its own concurrent peer copies: copy-engine copies queue, kernel copies share.

Measured on NVIDIA H200 (NV18 through NVSwitch), 2026-11-28, each copy of a group on its own stream
(docs/benchmarks.md "CE all-to-all on 4 x H200: the copy engines, not the links"):

* **Copy engines serve one issuing GPU's peer copies one at a time.** k CE copies from GPU 0, to one peer
  (2 GPUs) or to k different peers (4 GPUs), move together what one copy moves (387-395 GB/s, CV < 0.2%),
  and in each repetition one copy runs at the full rate and the others at 1/2, 1/3, ... of it (flow
  minima 194 / 129 at 64 MiB): a queue whose order changes between repetitions. Copies *into* one GPU
  from two issuers run at once and share its ingress evenly (198 + 198, CV 0.1%); a permutation (each GPU
  issues one copy) keeps every copy's rate (1524-1547 GB/s for four). So a group's copy-engine copies are
  one queue per issuing GPU (``Method.issuer``); the queue's order is the driver's choice, which CUDA does
  not expose, and the twin takes it as uniformly random: each flow's prediction is the expectation over
  the orders, and the group's total has a spread (``QueueOrders``): the 4-GPU CE all-to-all's measured
  median 817-937 GB/s, minimum 677-680 and maximum 1163-1557 (CV 12-20%) are that spread, with no fitted
  constant. Whether a vendor's engines queue is ``copy_engine_queue.<vendor>`` (model/params.py).
* **Kernel copies of one GPU split its SMs evenly.** k sm-push copies from one GPU move together what one
  moves (367-369 GB/s against the twin's link-bound 394 without this), each the same share (CV 0.1%):
  one kernel copy alone is already held below the link by the SMs that issue it, so the GPU's kernel
  copies share one resource with the rate of the fastest of them alone (``issuer_rows``).

A queue is a chain of stages (``FlowProblem.stage_next``): the next copy of an issuer starts when the one
before it ends, with no latency of its own (three queued 64 MiB copies total 387.9 GB/s, one alone
388.2). The orders are simulated in batches, each order its own block of the resources, by the compiled
event loop (``model.kernel``), which reports every stage's finish time.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.sparse import block_diag, csc_matrix, vstack

from . import kernel
from .contention import FlowProblem

#: Every order is simulated while there are at most this many (4 GPUs' all-to-all: 6^4 = 1296).
MAX_EXACT_ORDERS = 4096
#: Beyond MAX_EXACT_ORDERS, this many orders drawn with ORDER_SEED (the same orders at every call).
SAMPLED_ORDERS = 512
ORDER_SEED = 20261128
#: Above this many queued copies in one group the queues are not simulated order by order (cluster-scale
#: groups): each issuer's copies share its one-copy rate evenly instead (``issuer_rows``), which gives the
#: queue's total time but not its order (the predict path stays fast).
MAX_QUEUED_COPIES = 256
#: Stages simulated in one call of the event loop (orders batched as blocks of one problem).
BATCH_STAGES = 256


@dataclass(frozen=True)
class QueueOrders:
    """The spread of a queued group's total over the queue orders simulated.

    Attributes:
        orders: how many orders were simulated.
        exhaustive: every order (else ``orders`` drawn with the fixed seed ``ORDER_SEED``).
        total_gb_per_s_min, total_gb_per_s_median, total_gb_per_s_mean, total_gb_per_s_max: the group's
            bytes over its elapsed time (the slowest copy's finish), GB/s, over the orders.
        elapsed_s_median: the group's elapsed time in the median order, seconds (the group's time a
            total is reported from: ``predict.group_elapsed_s``).
    """

    orders: int
    exhaustive: bool
    total_gb_per_s_min: float
    total_gb_per_s_median: float
    total_gb_per_s_mean: float
    total_gb_per_s_max: float
    elapsed_s_median: float

    def text(self) -> str:
        how = f"all {self.orders} orders" if self.exhaustive else f"{self.orders} orders sampled, seed {ORDER_SEED}"
        return (f"copies queued on their issuing GPU's copy engines, over the queue orders ({how}): total "
                f"{self.total_gb_per_s_min:.0f}-{self.total_gb_per_s_max:.0f} GB/s, median {self.total_gb_per_s_median:.0f}, "
                f"mean {self.total_gb_per_s_mean:.0f}")


def issuer_queues(issuers: Sequence[Hashable | None]) -> list[list[int]]:
    """Indices of the copies each issuer serves, for the issuers with two or more (in first-seen order);
    ``None`` = a copy no issuer queue holds."""
    by: dict[Hashable, list[int]] = {}
    for k, g in enumerate(issuers):
        if g is not None:
            by.setdefault(g, []).append(k)
    return [ks for ks in by.values() if len(ks) > 1]


def order_count(queues: Sequence[Sequence[int]]) -> int:
    """How many ways the queues can be ordered (the product of their lengths' factorials)."""
    return math.prod(math.factorial(len(q)) for q in queues)


def queue_orders(queues: Sequence[Sequence[int]], *, max_exact: int = MAX_EXACT_ORDERS, sampled: int = SAMPLED_ORDERS,
                 seed: int = ORDER_SEED) -> tuple[list[tuple[tuple[int, ...], ...]], bool]:
    """(the orders to simulate, whether they are all of them): every combination of the queues' permutations
    while there are at most ``max_exact``, else ``sampled`` combinations drawn with ``seed`` (each queue's
    order uniformly random, independently)."""
    if order_count(queues) <= max_exact:
        return list(itertools.product(*(list(itertools.permutations(q)) for q in queues))), True
    rng = np.random.default_rng(seed)
    return [tuple(tuple(int(x) for x in rng.permutation(np.asarray(q))) for q in queues) for _ in range(sampled)], False


def issuer_rows(problem: FlowProblem, groups: Sequence[Sequence[int]], capacity_gb_per_s: Sequence[float]) -> FlowProblem:
    """``problem`` with one more resource per group of stages (weight 1 on each, capacity as given): the
    stages of one issuer share its issuing rate (max-min: evenly, unless something else holds one back)."""
    if not groups:
        return problem
    n = problem.A.shape[1]
    cols = np.concatenate([np.asarray(g, dtype=np.int64) for g in groups])
    rows = np.repeat(np.arange(len(groups)), [len(g) for g in groups])
    extra = csc_matrix((np.ones(cols.size), (rows, cols)), shape=(len(groups), n))
    return FlowProblem(A=csc_matrix(vstack([problem.A, extra])),
                       capacity_gb_per_s=np.concatenate([problem.capacity_gb_per_s, np.asarray(capacity_gb_per_s, dtype=float)]),
                       stage_bytes=problem.stage_bytes, stage_cap_gb_per_s=problem.stage_cap_gb_per_s,
                       stage_latency_s=problem.stage_latency_s, stage_next=problem.stage_next, flow_first=problem.flow_first)


@dataclass(frozen=True)
class QueuedResult:
    """Per flow: the expected finish (s from the common start) and the expected rate while it is served
    (GB/s); the group's spread over the orders."""

    finish_s: np.ndarray
    rate_gb_per_s: np.ndarray
    spread: QueueOrders


def can_simulate(queues: Sequence[Sequence[int]]) -> bool:
    """Whether ``simulate_orders`` takes these queues: the compiled event loop is there (it reports every
    stage's finish; numba is a dependency) and the group is not cluster-scale."""
    return kernel.available() and sum(len(q) for q in queues) <= MAX_QUEUED_COPIES


def simulate_orders(problem: FlowProblem, queues: Sequence[Sequence[int]], total_bytes: float) -> QueuedResult:
    """Simulate ``problem`` (one flow per copy) with each queue's copies served one after another, over the
    orders of ``queue_orders``. A queued copy must be its flow's only stage (a peer copy); its successor in
    the queue starts when it ends, with no latency of its own."""
    firsts = np.asarray(problem.flow_first, dtype=np.int64)
    n_flows, n_stages = firsts.size, problem.stage_bytes.size
    last = firsts.copy()
    while (problem.stage_next[last] >= 0).any():
        more = problem.stage_next[last] >= 0
        last[more] = problem.stage_next[last[more]]
    for q in queues:
        if (last[list(q)] != firsts[list(q)]).any():
            raise ValueError("a queued copy must be a single-stage flow")
    orders, exhaustive = queue_orders(queues)
    per_call = max(1, BATCH_STAGES // max(1, n_stages))
    finish = np.empty((len(orders), n_flows))
    rates = np.empty((len(orders), n_flows))
    for c0 in range(0, len(orders), per_call):
        chunk = orders[c0:c0 + per_call]
        b = len(chunk)
        nxt = np.tile(problem.stage_next, b)
        nxt = np.where(nxt >= 0, nxt + np.repeat(np.arange(b) * n_stages, n_stages), -1)
        latency = np.tile(problem.stage_latency_s, b)
        starts = []
        for i, combo in enumerate(chunk):
            off = i * n_stages
            head = np.ones(n_flows, dtype=bool)
            for order in combo:
                stages = firsts[list(order)] + off
                nxt[stages[:-1]] = stages[1:]
                latency[stages[1:]] = 0.0
                head[list(order[1:])] = False
            starts.append(firsts[head] + off)
        done, first_rate, _ = kernel.simulate_compiled(
            block_diag([problem.A] * b, format="csc"), np.tile(problem.capacity_gb_per_s, b),
            np.tile(problem.stage_cap_gb_per_s, b), np.tile(problem.stage_bytes, b), latency, nxt,
            np.concatenate(starts), 0.0)
        done = done.reshape(b, n_stages)
        finish[c0:c0 + b] = done[:, last]
        rates[c0:c0 + b] = first_rate.reshape(b, n_stages)[:, firsts]
    elapsed = np.sort(finish.max(axis=1))
    totals = np.where(elapsed > 0, total_bytes / np.where(elapsed > 0, elapsed, 1.0) / 1e9, 0.0)
    middle = elapsed.size // 2  # the median order (the upper of the two middle ones for an even count)
    spread = QueueOrders(orders=len(orders), exhaustive=exhaustive, total_gb_per_s_min=float(totals.min()),
                         total_gb_per_s_median=float(totals[middle]), total_gb_per_s_mean=float(totals.mean()),
                         total_gb_per_s_max=float(totals.max()), elapsed_s_median=float(elapsed[middle]))
    return QueuedResult(finish_s=finish.mean(axis=0), rate_gb_per_s=np.nanmean(rates, axis=0), spread=spread)


__all__ = ["MAX_EXACT_ORDERS", "MAX_QUEUED_COPIES", "ORDER_SEED", "SAMPLED_ORDERS", "QueueOrders", "QueuedResult",
           "can_simulate", "issuer_queues", "issuer_rows", "order_count", "queue_orders", "simulate_orders"]
