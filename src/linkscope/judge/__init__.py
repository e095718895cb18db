"""Verdicts on measured numbers: is this number normal on the topology it ran on?

``verdict`` is the pure core (Verdict, Thresholds, Alternative, Expectation, Judgement, decide);
``expect`` builds expectations with the fabric model (``Judge``).
"""
