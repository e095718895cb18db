"""Imports point down (ARCHITECTURE.md, COMMON.md): every linkscope package imports only packages of
its own layer or below, and no two packages import each other, through any chain (no cycles).

Imports under ``if TYPE_CHECKING:`` are annotations only and do not count; imports inside
functions (lazy imports) do count: they are dependencies all the same.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "linkscope"

#: Layer of every top-level package or module, bottom first (cli → comm/measure → engines/mapping/judge →
#: model → patterns/report → results/discovery/counters → topology/traffic → units/errors).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "units", "atomic", "userfiles", "userschema", "rankenv", "endpoints", "__init__", "platforms", "procwait",
     "collectives", "cbuild",
     "engines.gpu.runtime"),
    ("topology", "traffic", "patterns.plan", "patterns.methods"),
    ("results", "discovery", "counters"),
    ("patterns", "report"),
    ("model",),
    ("engines", "mapping", "judge", "diagnose"),
    ("comm", "measure", "envinfo"),
    ("cli", "__main__"),
)
LEVEL = {name: i for i, names in enumerate(LAYERS) for name in names}
MODULES = tuple(name for name in LEVEL if "." in name)
"""Modules with a layer of their own, below their package's: the pure tables every layer reads (the
TransferPlan noun and the method table, ARCHITECTURE.md "one home") and the one vendor (CuPy)
accessor, which imports nothing of linkscope but errors."""


def _node(dotted: str) -> str:
    """The graph node of a module ``a.b.c`` (without ``linkscope.``): a listed module, else its top package."""
    for name in MODULES:
        if dotted == name or dotted.startswith(name + "."):
            return name
    return dotted.split(".")[0] if dotted else "__init__"


def _top(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return _node(".".join(parts))


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(path: Path) -> set[str]:
    """Top-level linkscope packages ``path`` imports (module level or lazily), TYPE_CHECKING aside."""
    module = list(path.relative_to(SRC).with_suffix("").parts)
    package = module[:-1]  # a module's package; for __init__.py the package itself
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.ImportFrom):
            target: list[str] | None = None
            if node.level:
                target = package[:len(package) - (node.level - 1)] + (node.module.split(".") if node.module else [])
            elif node.module and node.module.split(".")[0] == "linkscope":
                target = node.module.split(".")[1:]
            if target is not None:
                for alias in node.names:  # ``from ..patterns import methods`` names a module
                    parts = target + [alias.name]
                    named = SRC.joinpath(*parts)
                    is_module = named.with_suffix(".py").is_file() or (named / "__init__.py").is_file()
                    found.add(_node(".".join(parts if is_module else target)))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "linkscope" and len(parts) > 1:
                    found.add(_node(".".join(parts[1:])))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        src = _top(path)
        graph.setdefault(src, set()).update(t for t in _imports(path) if t != src)
    return graph


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return [f"{a} (layer {LEVEL[a]}) imports {b} (layer {LEVEL[b]})"
            for a, targets in sorted(graph.items()) for b in sorted(targets) if LEVEL[b] > LEVEL[a]]


def cycles(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Pairs (a, b) where a reaches b and b reaches a."""
    reach: dict[str, set[str]] = {a: set() for a in graph}
    for a, targets in graph.items():
        stack = list(targets)
        while stack:
            b = stack.pop()
            if b not in reach[a]:
                reach[a].add(b)
                stack.extend(graph.get(b, ()))
    return sorted((a, b) for a in graph for b in reach[a] if a < b and a in reach.get(b, set()))


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    """The source tree's package graph, parsed once for the three checks below (1.1 s a parse)."""
    return package_graph()


one_parse = pytest.mark.xdist_group("layers-graph")  # the three checks in one worker: one parse


@one_parse
def test_every_package_has_a_layer(graph):
    assert sorted(set(graph) - set(LEVEL)) == []


@one_parse
def test_imports_point_down(graph):
    assert upward_imports(graph) == []


@one_parse
def test_no_package_cycle(graph):
    assert cycles(graph) == []


@pytest.mark.parametrize("code,found", [
    ("from ..measure.stats import Stats\n", {"measure"}),
    ("def f():\n    from linkscope.cli import main\n", {"cli"}),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..engines.base import MethodInfo\n", set()),
    ("from . import io\n", {"results"}),
    ("from ..patterns.methods import H2D\n", {"patterns.methods"}),
])
def test_the_check_sees_upward_imports(tmp_path, monkeypatch, code, found):
    fake = SRC / "results" / "_layer_probe.py"  # parsed in place of a real module, never written
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None: code)
    assert _imports(fake) == found
    graph = {"results": found - {"results"}}
    assert bool(upward_imports(graph)) == bool({t for t in found if LEVEL[t] > LEVEL["results"]})
