"""Run an exported linkscope flow problem in SimGrid; for the system python3 (Debian python3-simgrid).

Reads JSON on stdin: {"links": [[name, bytes_per_s], ...], "flows": [[size_bytes, latency_s, cap_bytes_per_s,
[link index, ...]], ...], "optim": "Full" | "Lazy"}; writes {"finish_s": [...], "wall_s": w} on stdout.

Each flow is a communication between its own two hosts whose route is its links plus a private link
that carries the flow's own rate cap; it starts after its latency (an actor sleeps that long), as
linkscope delays a stage's start. The CM02 network model without cross traffic or
TCP window bound is plain max-min fair sharing, the model linkscope solves. Only the standard library
and simgrid are imported (no numpy in the system python).
"""
import json
import sys
import time

# SimGrid's CM02 shares bandwidth in inverse proportion to each flow's route latency (RTT-unfair
# max-min); linkscope's sharing is plain max-min. So every flow gets the same tiny route latency and
# its real start latency is a sleep of the actor that starts it.
_EPS_LATENCY_S = 1e-9


def main() -> int:
    problem = json.load(sys.stdin)
    import simgrid
    from simgrid import Actor, Comm, Engine, LinkInRoute, NetZone, this_actor

    args = [sys.argv[0], "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0", "--cfg=network/TCP-gamma:0",
            f"--cfg=network/optim:{problem.get('optim', 'Full')}", "--cfg=maxmin/precision:1e-12", "--cfg=surf/precision:1e-12",
            "--log=root.thres:critical"]
    engine = Engine(args)
    zone = NetZone.create_full_zone("linkscope")
    links = []
    for name, bw in problem["links"]:
        link = zone.create_link(name, float(bw))
        link.set_latency(0.0)
        link.seal()
        links.append(link)
    ends = []
    for k, (size, _latency, cap, route) in enumerate(problem["flows"]):
        a = zone.create_host(f"s{k}", 1.0)
        b = zone.create_host(f"d{k}", 1.0)
        own = zone.create_link(f"cap{k}", float(cap) if cap and cap != float("inf") else 1e30)
        own.set_latency(_EPS_LATENCY_S)
        own.seal()
        hops = [LinkInRoute(own)] + [LinkInRoute(links[i]) for i in route]
        zone.add_route(a.netpoint, b.netpoint, None, None, hops, False)
        ends.append((a, b, max(round(size), 1)))
    zone.seal()
    finish = [0.0] * len(ends)

    def launcher(group, delay):
        if delay > 0:
            this_actor.sleep_for(delay)
        comms = [Comm.sendto_async(*ends[k]) for k in group]
        left = list(range(len(comms)))
        while left:
            done = Comm.wait_any([comms[i] for i in left])
            finish[group[left[done]]] = Engine.clock
            left.pop(done)

    groups: dict = {}
    for k, flow in enumerate(problem["flows"]):
        groups.setdefault(float(flow[1]), []).append(k)
    for g, (delay, group) in enumerate(sorted(groups.items())):
        Actor.create(f"launcher{g}", ends[group[0]][0], launcher, group, max(delay - _EPS_LATENCY_S, 0.0))
    t0 = time.perf_counter()
    engine.run()
    json.dump({"finish_s": finish, "wall_s": time.perf_counter() - t0, "simgrid": simgrid.__doc__ or ""}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
