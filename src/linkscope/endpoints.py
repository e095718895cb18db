"""The ends of a transfer, shared by the plan (patterns) and the record (results): a GPU index, the
host memory nearest a GPU (``HOST``), or an aggregate over several devices (``ALL``).

A bottom-layer module (it imports nothing), so the TransferPlan and the RunRecord do not import
each other.
"""
from __future__ import annotations

HOST = "host"
ALL = "*"
Endpoint = int | str
