"""A full GB200 NVL72 rack (coreweave/nccl-tests#43, tests/fixtures/public): judged against the
`gb200-nvl72` preset. Before the Grace CPUs reached the other trays' GPUs (a GPU bridging its NVLink-C2C to
the NVLink fabric) every number was "not judged: no route between 'cpu1' and 'gpu0'"."""
from __future__ import annotations

from pathlib import Path

from linkscope.judge.expect import Judge
from linkscope.judge.runs import judge_runs
from linkscope.judge.verdict import Verdict
from linkscope.results.peertools.detect import parse
from linkscope.topology.presets import load_preset

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "public" / "nccl-tests-gb200nvl72-coreweave43.txt"


def test_every_number_of_the_nvl72_rack_is_judged_and_no_host_memory_cause_is_named():
    run = parse(FIXTURE.read_text(), FIXTURE.name)
    judged = judge_runs([run], Judge(load_preset("gb200-nvl72")))[0].judgements
    assert len(judged) == 10
    assert all(j.verdict is not Verdict.UNJUDGED for j in judged), [j.line for j in judged][:2]
    assert all(j.expectation.twin and j.expectation.twin > 0 for j in judged)
    # the Graces reach the other trays only over C2C and NVLink: "through host memory" is no slower path here
    assert not any(a.key == "collective-no-p2p" for j in judged for a in j.expectation.alternatives)
    assert not any(j.cause_key == "collective-no-p2p" for j in judged)
