"""cli/ parses, calls one library function and renders (docs/architecture.md, "cli/"): every command
function's body stays under ``MAX_BODY_LINES`` lines, so library work cannot grow back into it.

The rule, counted honestly: a *command function* is any function in src/linkscope/cli/*.py that Typer
registers, by decorator (``@app.command(...)``, ``@group.callback()``) or by call
(``app.command("check")(check)``). Its body is every source line from the first statement after the
docstring to the last line of the last statement: blank lines, comments and nested helper functions
count. Option declarations (the signature) and the docstring do not. A longer command moves its
logic into the package that owns it (mapping/request.py, diagnose/examine.py, model/groups.py ...)
or its rendering into a helper of its module."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

CLI = Path(__file__).parents[2] / "src" / "linkscope" / "cli"
MAX_BODY_LINES = 40


def _is_registration(call: ast.expr) -> bool:
    """``X.command(...)`` or ``X.callback(...)``: a Typer registration."""
    return isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr in ("command", "callback")


def command_functions(tree: ast.Module) -> list[ast.FunctionDef]:
    functions = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    found = {n.name: n for n in functions.values() if any(_is_registration(d) for d in n.decorator_list)}
    for node in ast.walk(tree):  # app.command("check")(check)
        if isinstance(node, ast.Call) and _is_registration(node.func) and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Name) and arg.id in functions:
                found[arg.id] = functions[arg.id]
    return list(found.values())


def body_lines(function: ast.FunctionDef) -> int:
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
        body = body[1:]
    if not body:
        return 0
    return (body[-1].end_lineno or body[-1].lineno) - body[0].lineno + 1


def _commands() -> list[tuple[str, ast.FunctionDef]]:
    out = []
    for path in sorted(CLI.glob("*.py")):
        out.extend((f"{path.name}:{f.name}", f) for f in command_functions(ast.parse(path.read_text())))
    return out


def test_the_rule_finds_every_command_of_the_cli():
    names = {name for name, _ in _commands()}
    # decorated, a group callback, and one registered by call
    assert {"cmd_map.py:map_command", "cmd_topo.py:topo", "cmd_check.py:check", "cmd_model.py:predict_cmd"} <= names
    assert len(names) >= 20


def test_the_counter_counts_every_line_after_the_docstring():
    tree = ast.parse('import typer\napp = typer.Typer()\n\n@app.command("x")\ndef x():\n    """doc\n    more"""\n'
                     + "    a = 1\n\n    # note\n" * 30 + "\ndef y():\n    pass\n\napp.command('y')(y)\n")
    functions = {f.name: f for f in command_functions(tree)}
    assert set(functions) == {"x", "y"}
    assert body_lines(functions["x"]) == 88  # 30 x (statement, blank, comment), less the trailing blank and comment
    assert body_lines(functions["y"]) == 1


@pytest.mark.parametrize("name, function", _commands(), ids=lambda v: v if isinstance(v, str) else "")
def test_a_command_body_is_under_the_limit(name, function):
    lines = body_lines(function)
    assert lines <= MAX_BODY_LINES, (f"{name} has a {lines}-line body (limit {MAX_BODY_LINES}): move its logic into "
                                     "the package that owns it, or its rendering into a helper")
