"""Measure a report's layout in headless Chromium: page height, elements that stick out of their card
(a ``section``), and text boxes that overlap each other.

How: a copy of the page gets a small script that measures after layout and writes JSON into a
``<pre id="layout-probe">``; Chromium's ``--dump-dom`` prints the DOM after the script ran. No CDP
client, no extra package. Used by tests/report/test_browser.py and by docs/img's screenshots.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--enable-logging=stderr", "--v=0"]
WIDTH_PX = 1280

_PROBE = r"""
<script>
(function () {
  if (OPEN_ALL) document.querySelectorAll('details').forEach(function (d) { d.open = true; });
  function box(r) { return {l: r.left, t: r.top + scrollY, r: r.right, b: r.bottom + scrollY}; }
  var out = {height: document.documentElement.scrollHeight, overflow: [], overlaps: [], sections: {}};
  document.querySelectorAll('section, header, .banner').forEach(function (el, i) {
    out.sections[(el.id || el.tagName.toLowerCase()) + (out.sections[el.id] ? i : '')] = Math.round(el.getBoundingClientRect().height);
  });
  // 1. nothing sticks out of its card (a scrolling wrapper inside a card counts as the card's edge)
  document.querySelectorAll('section').forEach(function (card) {
    var edge = card.getBoundingClientRect().right + 1;
    card.querySelectorAll('*').forEach(function (el) {
      if (el.closest('details:not([open])') && el.tagName !== 'SUMMARY' && !el.closest('summary')) return;
      var r = el.getBoundingClientRect();
      if (r.width === 0 && r.height === 0) return;
      if (r.right > edge) out.overflow.push((card.id || 'section') + ': <' + el.tagName.toLowerCase() +
        (el.className ? '.' + el.className : '') + '> ' + (el.textContent || '').trim().slice(0, 60) +
        ' right ' + Math.round(r.right) + ' > ' + Math.round(edge));
    });
  });
  // 2. no text box overlaps another (text nodes' line boxes, bucketed by 50 px rows)
  var rects = [], walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  var node, id = 0;
  while ((node = walker.nextNode())) {
    if (!node.textContent.trim() || node.parentElement.closest('script,style,#layout-probe')) continue;
    if (node.parentElement.closest('details:not([open])') && !node.parentElement.closest('summary')) continue;
    var range = document.createRange(); range.selectNodeContents(node); id += 1;
    Array.prototype.forEach.call(range.getClientRects(), function (r) {
      if (r.width > 0 && r.height > 0) rects.push({id: id, b: box(r), text: node.textContent.trim().slice(0, 40)});
    });
  }
  var rows = {};
  rects.forEach(function (x) {
    for (var y = Math.floor(x.b.t / 50); y <= Math.floor(x.b.b / 50); y++) (rows[y] = rows[y] || []).push(x);
  });
  var seen = {};
  Object.keys(rows).forEach(function (y) {
    var list = rows[y];
    for (var i = 0; i < list.length; i++) for (var j = i + 1; j < list.length; j++) {
      var a = list[i], c = list[j];
      if (a.id === c.id) continue;
      var w = Math.min(a.b.r, c.b.r) - Math.max(a.b.l, c.b.l), h = Math.min(a.b.b, c.b.b) - Math.max(a.b.t, c.b.t);
      var key = a.id + ':' + c.id;
      if (w > 1 && h > 1 && !seen[key]) { seen[key] = 1; out.overlaps.push(a.text + ' / ' + c.text); }
    }
  });
  var pre = document.createElement('pre'); pre.id = 'layout-probe';
  pre.textContent = JSON.stringify(out); document.body.appendChild(pre);
})();
</script>
"""


def measure(page: Path, workdir: Path, width: int = WIDTH_PX, open_all: bool = False) -> dict:
    """``{"height": px, "overflow": [...], "overlaps": [...], "sections": {id: px}}`` of ``page`` rendered
    ``width`` px wide, with every ``<details>`` folded as shipped, or all open (``open_all``)."""
    if CHROMIUM is None:
        raise RuntimeError("chromium not installed (apt-get install chromium)")
    probe = workdir / f"probe-{'open-' if open_all else ''}{page.name}"
    script = _PROBE.replace("OPEN_ALL", "true" if open_all else "false")
    probe.write_text(page.read_text().replace("</body>", script + "</body>"))
    cmd = [CHROMIUM, *FLAGS, f"--user-data-dir={workdir / 'profile'}", f"--window-size={width},1000",
           "--virtual-time-budget=5000", "--dump-dom", probe.resolve().as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    found = re.search(r'<pre id="layout-probe">(.*?)</pre>', proc.stdout, re.S)
    if not found:
        raise RuntimeError(f"no layout probe in Chromium's DOM: {proc.stderr[-1500:]}")
    import html

    return json.loads(html.unescape(found.group(1)))


def screenshot(page: Path, shot: Path, workdir: Path, height: int, width: int = WIDTH_PX) -> None:
    """A PNG of the page's top ``height`` px."""
    if CHROMIUM is None:
        raise RuntimeError("chromium not installed (apt-get install chromium)")
    cmd = [CHROMIUM, *FLAGS, f"--user-data-dir={workdir / 'profile'}", f"--window-size={width},{height}",
           f"--screenshot={shot}", page.resolve().as_uri()]
    subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=True)
