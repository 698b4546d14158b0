"""The type stubs (``memdb/__init__.pyi``, ``memdb/_native.pyi``) against the runtime: every
function and method a stub declares exists, with the same parameters in the same order, of the
same kinds (positional, keyword-only, ``*args``), and the same defaults; and every public
runtime method is in the stub. A stub that promises ``dry_run=True`` where the code runs for
real is the bug this guards against."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import memdb
from memdb import _native

PACKAGE = Path(memdb.__file__).resolve().parent

Param = Tuple[str, str, Any]  # name, kind, default (inspect.Parameter.empty: none)

_KINDS = {
    "posonly": inspect.Parameter.POSITIONAL_ONLY.name,
    "arg": inspect.Parameter.POSITIONAL_OR_KEYWORD.name,
    "kwonly": inspect.Parameter.KEYWORD_ONLY.name,
    "vararg": inspect.Parameter.VAR_POSITIONAL.name,
    "kwarg": inspect.Parameter.VAR_KEYWORD.name,
}


def _default(node: Optional[ast.expr]) -> Any:
    if node is None:
        return inspect.Parameter.empty
    if isinstance(node, ast.Constant) and node.value is Ellipsis:
        return Ellipsis  # the stub does not say
    return ast.literal_eval(node)


def _stub_params(fn: ast.FunctionDef) -> List[Param]:
    a = fn.args
    params: List[Param] = []
    positional = a.posonlyargs + a.args
    defaults: List[Optional[ast.expr]] = [None] * (len(positional) - len(a.defaults)) + list(
        a.defaults
    )
    for i, (arg, default) in enumerate(zip(positional, defaults)):
        kind = "posonly" if i < len(a.posonlyargs) else "arg"
        params.append((arg.arg, _KINDS[kind], _default(default)))
    if a.vararg:
        params.append((a.vararg.arg, _KINDS["vararg"], inspect.Parameter.empty))
    for arg, default in zip(a.kwonlyargs, a.kw_defaults):
        params.append((arg.arg, _KINDS["kwonly"], _default(default)))
    if a.kwarg:
        params.append((a.kwarg.arg, _KINDS["kwarg"], inspect.Parameter.empty))
    return params


def _runtime_params(obj: Any) -> List[Param]:
    sig = inspect.signature(obj)
    return [(p.name, p.kind.name, p.default) for p in sig.parameters.values()]


def _stub(path: Path) -> Tuple[Dict[str, ast.FunctionDef], Dict[str, Dict[str, ast.FunctionDef]]]:
    tree = ast.parse(path.read_text())
    functions: Dict[str, ast.FunctionDef] = {}
    classes: Dict[str, Dict[str, ast.FunctionDef]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            functions[node.name] = node
        elif isinstance(node, ast.ClassDef):
            classes[node.name] = {
                n.name: n for n in node.body if isinstance(n, ast.FunctionDef)
            }
    return functions, classes


def _is_property(fn: ast.FunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "property" for d in fn.decorator_list)


def _compare(where: str, stub: ast.FunctionDef, runtime: Any, drop_self: bool) -> List[str]:
    want = _stub_params(stub)
    if drop_self and want and want[0][0] in ("self", "cls"):
        want = want[1:]
    have = _runtime_params(runtime)
    if drop_self and have and have[0][0] in ("self", "cls"):
        have = have[1:]
    problems = []
    if [(n, k) for n, k, _ in want] != [(n, k) for n, k, _ in have]:
        problems.append(f"{where}: stub {want} != runtime {have}")
        return problems
    for (name, _, stub_default), (_, _, run_default) in zip(want, have):
        if stub_default is Ellipsis:
            continue
        if stub_default != run_default:
            problems.append(
                f"{where}({name}=...): the stub says {stub_default!r}, the code {run_default!r}"
            )
    return problems


def test_the_package_stub_matches_the_runtime() -> None:
    functions, classes = _stub(PACKAGE / "__init__.pyi")
    problems: List[str] = []
    for name, fn in functions.items():
        problems += _compare(f"memdb.{name}", fn, getattr(memdb, name), drop_self=False)
    checked = 0
    for cls_name in ("Store",):
        cls = getattr(memdb, cls_name)
        stubbed = classes[cls_name]
        for name, fn in stubbed.items():
            if _is_property(fn) or name.startswith("__"):
                assert hasattr(cls, name), f"memdb.{cls_name}.{name} is stubbed but missing"
                continue
            runtime = inspect.getattr_static(cls, name)
            if isinstance(runtime, classmethod):
                problems += _compare(
                    f"memdb.{cls_name}.{name}", fn, getattr(cls, name), drop_self=True
                )
            else:
                problems += _compare(f"memdb.{cls_name}.{name}", fn, runtime, drop_self=True)
            checked += 1
        public = {n for n in vars(cls) if not n.startswith("_")}
        missing = public - set(stubbed)
        assert not missing, f"memdb.{cls_name} has methods its stub lacks: {sorted(missing)}"
    assert checked > 15, checked
    assert not problems, "\n".join(problems)


def test_the_native_stub_matches_the_extension() -> None:
    functions, classes = _stub(PACKAGE / "_native.pyi")
    problems: List[str] = []
    for name, fn in functions.items():
        problems += _compare(f"_native.{name}", fn, getattr(_native, name), drop_self=False)
    stubbed = classes["Store"]
    for name, fn in stubbed.items():
        attr = getattr(_native.Store, name)
        if _is_property(fn) or name.startswith("__"):
            continue
        problems += _compare(f"_native.Store.{name}", fn, attr, drop_self=True)
    public = {n for n in dir(_native.Store) if not n.startswith("_")}
    missing = public - set(stubbed)
    assert not missing, f"_native.Store has methods its stub lacks: {sorted(missing)}"
    assert not problems, "\n".join(problems)


def test_forget_is_a_dry_run_unless_told_otherwise(tmp_path: Path) -> None:
    params = inspect.signature(memdb.Store.forget).parameters
    assert params["dry_run"].default is True
    assert inspect.signature(_native.Store.forget).parameters["dry_run"].default is True
    # Called bare, as a preview would be: it plans and changes nothing.
    with memdb.Store.open(tmp_path / "s.memdb") as store:
        store.ingest([{"source": "note", "time": "2001-05-01", "body": "an old note"}], embed=False)
        before = store.stats()
        plan = store.forget()
        assert plan["dry_run"] is True and plan["policy"] == "timed-gentle"
        assert store.stats() == before
