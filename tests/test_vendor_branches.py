"""Callers ask the platform row; they never branch on a vendor's name (ARCHITECTURE.md, "the platform
table"). This test lists the vendor branches outside the platform modules.

The rule, precisely (checked on the syntax tree of every module under src/linkscope):

* a *vendor word* is one of ``VENDOR_WORDS`` (vendors, their runtimes and libraries, their GPU
  fabrics), compared whole and case-insensitively;
* a *vendor operand* is a string literal that is a vendor word (``"amd"``, ``"NVLink"``), a
  tuple/list/set display holding one, a name or attribute spelled as a vendor word or ``is_<word>``
  (``NVLINK``, ``self.cuda``, ``rt.is_hip``), or ``getattr(x, "<such name>")``. Members of the
  topology's ``LinkKind`` enum are not: a link's kind is a fact of the Topology, like ``pcie``;
* a *vendor branch* is a comparison (``==``, ``!=``, ``in``, ``not in``, ``is``, ``is not``) with a
  vendor operand on either side; a ``.startswith``/``.endswith`` of a vendor-word literal; or an
  ``if``/``elif``/``while``/conditional-expression test that is (or is a ``not``/``and``/``or``
  operand that is) a vendor-named name, attribute or ``getattr``.

Data named after a vendor (``nvlink_bytes``, a dict key ``"nvidia"``) is not a branch. The platform
modules, where vendor names belong, are ``platforms.py``, ``vendors/`` and the modules in
``PLATFORM_MODULES`` (each is one vendor's implementation that a platform row names).
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "linkscope"

VENDOR_WORDS = frozenset({"nvidia", "cuda", "nvml", "amd", "hip", "rocm", "amdsmi", "xgmi", "nvlink"})

#: one vendor's modules: a platform row names each (or it is the model of one vendor's library)
PLATFORM_MODULES = frozenset({
    "platforms.py", "vendors/",
    "discovery/nvml.py", "discovery/amdsmi.py", "discovery/amdsmi_values.py", "discovery/rocm.py",
    "discovery/hipdevices.py", "counters/nvml.py", "counters/amdsmi.py",
    "engines/cuda/", "engines/rocm/", "mapping/nvidia.py", "mapping/amd.py",
    "model/nccl_tuning.py", "model/rccl.py",
})

def _is_platform_module(rel: str) -> bool:
    return any(rel == m or (m.endswith("/") and rel.startswith(m)) for m in PLATFORM_MODULES)


def _vendor_name(identifier: str) -> bool:
    word = identifier.lower()
    return word in VENDOR_WORDS or (word.startswith("is_") and word[3:] in VENDOR_WORDS)


def _named(node: ast.AST, *, literals: bool = True) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return literals and node.value.lower() in VENDOR_WORDS
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return literals and any(_named(e) for e in node.elts)
    if isinstance(node, ast.Name):
        return _vendor_name(node.id)
    if isinstance(node, ast.Attribute):
        if isinstance(node.value, ast.Name) and node.value.id == "LinkKind":
            return False
        return _vendor_name(node.attr)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
        return _vendor_name(node.args[1].value)
    return False


def vendor_branches(tree: ast.AST) -> Iterator[int]:
    """Line numbers of the vendor branches in a module (the rule above)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            if any(_named(o) for o in (node.left, *node.comparators)):
                yield node.lineno
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("startswith", "endswith") and node.args and _named(node.args[0]):
            yield node.lineno
        elif isinstance(node, (ast.If, ast.IfExp, ast.While)):
            tests = node.test.values if isinstance(node.test, ast.BoolOp) else [node.test]
            for test in tests:
                test = test.operand if isinstance(test, ast.UnaryOp) else test
                if _named(test, literals=False):
                    yield node.lineno


def found() -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if _is_platform_module(rel):
            continue
        lines = sorted(set(vendor_branches(ast.parse(path.read_text(), str(path)))))
        if lines:
            out[rel] = lines
    return out


def test_the_rule_sees_the_branches_it_names() -> None:
    """The detector itself: each form of the rule is found, data named after a vendor is not."""
    code = '''
if device.vendor == "amd": pass
x = "HIP" if self.platform == "rocm" else "CUDA"
if kind in ("nvlink", "xgmi"): pass
if self.cuda or not rt.is_hip: pass
if fabric != NVLINK: pass
if name.startswith("NVML"): pass
if getattr(runtime, "is_hip", False): pass
ok = link.kind is LinkKind.NVLINK
data = {"nvidia": 0}; nvlink_bytes = 3
if nvlink_bytes is None: pass
'''
    assert sorted(set(vendor_branches(ast.parse(code)))) == [2, 3, 4, 5, 6, 7, 8]


def test_no_vendor_branch_outside_the_platform_modules() -> None:
    where = found()
    assert not where, f"vendor branches outside the platform modules (file: lines); ask the platform row instead: {where}"


def test_every_platform_module_exists() -> None:
    for name in PLATFORM_MODULES:
        assert (SRC / name).exists(), name
