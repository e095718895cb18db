"""The one method table: its rules, and the docs generated from it."""
import re
from pathlib import Path

import pytest

from linkscope.errors import ConfigError
from linkscope.patterns.methods import (
    LATENCY_KINDS,
    METHODS,
    endpoint_reason,
    get_method,
    host_direction,
    keys_where,
    markdown_table,
    method_keys,
    methods_for,
)
from linkscope.patterns.plan import HOST

ROOT = Path(__file__).resolve().parents[2]


def test_endpoint_rules():
    assert endpoint_reason("ce", 0, 1) is None and endpoint_reason("ce", HOST, 1) is None
    assert "use 'local'" in endpoint_reason("ce", 1, 1)
    assert "needs two different GPUs" in endpoint_reason("staged-pinned", 0, HOST)
    assert endpoint_reason("h2d", HOST, 0) is None and "host -> GPU" in endpoint_reason("h2d", 0, HOST)
    assert endpoint_reason("d2h", 0, HOST) is None and "GPU -> host" in endpoint_reason("d2h", HOST, 0)
    assert endpoint_reason("local", 2, 2) is None and "within one GPU" in endpoint_reason("local", 0, 1)
    assert "bad transfer end" in endpoint_reason("ce", "gpu0", 1)
    with pytest.raises(ConfigError):
        get_method("warp")


def test_table_facts():
    assert host_direction("h2d-pageable") == "h2d" and host_direction("d2h") == "d2h" and host_direction("ce") is None
    assert set(keys_where(needs_peer_access=True)) == {"ce", "ce-read", "ce-write", "ce-blit", "sm-push", "sm-pull"}
    assert get_method("ce-blit").env_for("amd") == {"HSA_ENABLE_SDMA": "0"} and get_method("ce-blit").env_for("nvidia") == {}
    assert "ce-blit" in method_keys("amd") and "ce-blit" not in method_keys("nvidia")
    assert len(methods_for("nvidia")) == len(METHODS) - 1
    assert "host-read" in LATENCY_KINDS


def test_guide_table_is_generated_from_the_table():
    text = (ROOT / "docs" / "guide.md").read_text()
    block = re.search(r"<!-- method-table:[^\n]*-->\n(.*?)\n<!-- /method-table -->", text, re.S)
    assert block is not None and block.group(1) == markdown_table()


def test_method_keys_are_spelled_only_in_the_table():
    """grep: no module of the package writes a method key as a string literal except the table."""
    pattern = "|".join(re.escape(f'"{k}"') for k in method_keys() if k not in ("local",)) + "|" + \
        "|".join(re.escape(f"'{k}'") for k in method_keys() if k not in ("local",))
    src = ROOT / "src" / "linkscope"
    allowed = {src / "patterns" / "methods.py"}
    offenders = []
    for path in src.rglob("*.py"):
        if path in allowed:
            continue
        for no, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(pattern, line) and not line.lstrip().startswith(("#", ">>>")):
                offenders.append(f"{path.relative_to(ROOT)}:{no}: {line.strip()}")
    assert offenders == [], "\n".join(offenders)
