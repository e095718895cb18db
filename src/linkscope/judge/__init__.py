"""Verdicts on measured numbers: is this number normal on the topology it ran on?

* ``verdict``: the pure core (Verdict, Thresholds, Alternative, Expectation, Judgement, decide);
  the stable API other features build on;
* ``expect``: ``Judge``, expectations from the twin (fabric and collective models) for one
  Measurement, and its verdict;
* ``runs``: whole files judged, the summary, and the RunRecord ``linkscope check --json`` writes.
"""
