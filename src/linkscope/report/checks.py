"""The report's "Checked numbers" section: runs judged by ``linkscope check --json`` (imported peer
tools' outputs and linkscope's own runs), per tool, with the verdict and its reason for each number.

It reads only what the check wrote into the record (``extra["check"]``: the sources, the verdicts
in measurement order, the thresholds), so the report needs no model.
"""
from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from ..results.schema import RunRecord

MAX_ROWS_PER_TOOL = 400
_CLASS = {"ok": "ok", "low": "error", "suspicious-high": "waived", "not judged": "muted"}
_ORDER = ("low", "suspicious-high", "not judged", "ok")


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _verdicts(record: RunRecord) -> list[Mapping[str, Any]]:
    check = (record.extra or {}).get("check")
    if not isinstance(check, Mapping) or not isinstance(check.get("verdicts"), list):
        return []
    return [v for v in check["verdicts"] if isinstance(v, Mapping)]


def check_section(records: Sequence[RunRecord], labels: Sequence[str]) -> str:
    """HTML of the section ("" when no record holds verdicts)."""
    parts: list[str] = []
    for record, label in zip(records, labels):
        verdicts = _verdicts(record)
        if not verdicts:
            continue
        check = record.extra["check"]
        sources = [s for s in check.get("sources") or [] if isinstance(s, Mapping)]
        head = (f"<p>{_e(label)}: judged against <b>{_e(check.get('topology', ''))}</b>; "
                f"{_e(check.get('thresholds_text', ''))}. {_e((check.get('summary') or {}).get('line', ''))}</p>")
        rows = [f"<tr><td>{_e(s.get('tool'))}</td><td>{_e(s.get('version', ''))}</td><td>{_e(s.get('file'))}</td>"
                f"<td class=\"num\">{_e(s.get('count'))}</td></tr>" for s in sources]
        table = ("<table><thead><tr><th>tool</th><th>version</th><th>file</th><th>numbers</th></tr></thead><tbody>"
                 + "".join(rows) + "</tbody></table>")
        by_tool: dict[str, list[Mapping[str, Any]]] = {}
        for v in verdicts:
            by_tool.setdefault(str(v.get("tool", "?")), []).append(v)
        blocks = []
        for tool, items in by_tool.items():
            counts = {k: sum(1 for v in items if v.get("verdict") == k) for k in _ORDER}
            summary = ", ".join(f'<span class="{_CLASS[k]}">{n} {k}</span>' for k, n in counts.items() if n)
            ordered = sorted(items, key=lambda v: _ORDER.index(v.get("verdict")) if v.get("verdict") in _ORDER else 9)
            body = "".join(
                f'<tr><td class="{_CLASS.get(str(v.get("verdict")), "")}">{_e(v.get("verdict"))}</td>'
                f"<td>{_e(v.get('subject'))}</td><td>{_e(v.get('reason'))}</td><td class=\"muted\">{_e(v.get('where', ''))}</td></tr>"
                for v in ordered[:MAX_ROWS_PER_TOOL])
            more = (f'<p class="muted">{len(ordered) - MAX_ROWS_PER_TOOL} more rows in the JSON record.</p>'
                    if len(ordered) > MAX_ROWS_PER_TOOL else "")
            blocks.append(f"<h3>{_e(tool)} ({summary})</h3><table><thead><tr><th>verdict</th><th>number</th><th>reason</th>"
                          f"<th>source</th></tr></thead><tbody>{body}</tbody></table>{more}")
        parts.append(head + table + "".join(blocks))
    if not parts:
        return ""
    return '<section id="checks"><h2>Checked numbers: is this number normal?</h2>' + "".join(parts) + "</section>"
