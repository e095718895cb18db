"""docs/facts.md prints the GPU facts table exactly as the module has it."""
from __future__ import annotations

import re
from pathlib import Path

from linkscope.topology.gpufacts import GPU_FACTS, facts_table_markdown

DOCS = Path(__file__).parents[2] / "docs"


def test_facts_doc_matches_the_module() -> None:
    text = (DOCS / "facts.md").read_text()
    block = re.search(r"<!-- gpufacts:begin -->\n(.*)<!-- gpufacts:end -->", text, flags=re.S)
    assert block, "docs/facts.md lost its gpufacts markers"
    assert block.group(1) == facts_table_markdown(), (
        "docs/facts.md is stale: regenerate the block with linkscope.topology.gpufacts.facts_table_markdown()")
    for row in GPU_FACTS:
        assert f"| {row.key} |" in block.group(1)


def test_facts_doc_is_linked_and_presets_listed() -> None:
    assert "(facts.md)" in (DOCS / "guide.md").read_text()
    presets = (DOCS / "presets.md").read_text()
    assert "(facts.md)" in presets
    for name in ("a100-pcie-8-nvlink-pairs", "h100-pcie-2-nvlink", "hgx-b200-8", "gh200", "gb200-nvl72", "hgx-a100-8-4nic"):
        assert f"`{name}`" in presets
