"""The ``source`` of a tune key: the code of the Triton kernels a launch compiles, nothing else.

A tuned profile stays valid as long as what its launch compiles is the same, so the key hashes
the ``@triton.jit`` functions a launch names (``Method.launch_kernels``), every jit function they
call (found, as Triton's own dependency finder finds them, through the names each function's AST
reads in its globals), and the values of the constant globals they read (``tl.constexpr`` and
plain numbers). Each function counts as its canonical code (``code_text``): comments, docstrings,
formatting and line numbers do not, nor do the module it lives in, adapters, references, help
strings or preparation code. A method that names no kernels for a launch (a user's function, an
older revision's adapter) hashes every jit function its modules hold; one without any (a library
call) hashes its modules' code.

Only stdlib imports here: the migration of committed profiles loads this file beside another
revision's kprof.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import inspect
import re
import sys
import textwrap
import types
from pathlib import Path

REVISION_PACKAGE = re.compile(r"\bkprof_at_[0-9a-f]{12}\b")  # a revision's copy (kprof.methods.revision)


def _canonical(node) -> str:
    """An AST as text that is the same on every Python version: node names and their non-empty
    fields only. ``ast.unparse`` is not (3.12 renders f-strings with other quotes) and neither is
    ``ast.dump`` (3.12 adds empty ``type_params`` fields)."""
    if isinstance(node, ast.AST):
        fields = [f"{name}={_canonical(value)}" for name, value in ast.iter_fields(node)
                  if value not in (None, []) and name not in ("type_comment", "kind")]
        return f"{type(node).__name__}({','.join(fields)})"
    if isinstance(node, list):
        return "[" + ",".join(_canonical(v) for v in node) + "]"
    return repr(node)


def code_text(source: str) -> str:
    """Source reduced to its code: comments, docstrings and formatting dropped, as a canonical AST.

    Tune caches key on this, so rewording a docstring or re-wrapping a line keeps a measured
    profile valid, while any change to what runs invalidates it; the text does not depend on the
    Python version that computes it (a profile measured on the device's 3.12 is valid on 3.11).
    """
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return _canonical(tree)


# ---------------------------------------------------------------------- jit functions

def kernel_function(obj) -> types.FunctionType | None:
    """The Python function under a Triton kernel object (jit, interpreted, autotuned, heuristics),
    or None for anything else. Duck-typed on Triton's runtime classes, so nothing imports Triton."""
    inner, wrapped = obj, False
    while type(inner).__module__.startswith("triton.runtime") and hasattr(inner, "fn"):
        inner, wrapped = inner.fn, True
    return inner if wrapped and inspect.isfunction(inner) else None


def _function_source(fn: types.FunctionType) -> str:
    return textwrap.dedent(inspect.getsource(fn))


def _value_text(value) -> str | None:
    """A global's value as the key sees it: constants, ``tl.constexpr`` and Triton dtypes only
    (modules, classes and functions are not data)."""
    if type(value).__name__ == "constexpr" and type(value).__module__.startswith("triton"):
        value = value.value
    if type(value).__name__ == "dtype" and type(value).__module__.startswith("triton.language"):
        return f"tl.{value}"
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    if isinstance(value, tuple) and all(v is None or isinstance(v, (bool, int, float, str)) for v in value):
        return repr(value)
    return None


def _is_triton(value) -> bool:
    name = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", "") or ""
    return name == "triton" or name.startswith("triton.")


class _Reads(ast.NodeVisitor):
    """The globals a function's body reads: bare names and dotted chains (``mod.NAME``)."""

    def __init__(self, local: set[str]):
        self.local, self.reads = local, []

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load) and node.id not in self.local:
            self.reads.append((node.id,))

    def visit_Attribute(self, node: ast.Attribute) -> None:
        chain, base = [node.attr], node.value
        while isinstance(base, ast.Attribute):
            chain.append(base.attr)
            base = base.value
        if isinstance(base, ast.Name) and isinstance(base.ctx, ast.Load) and base.id not in self.local:
            self.reads.append((base.id, *reversed(chain)))
        else:
            self.generic_visit(node)


def _reads(fn: types.FunctionType, tree: ast.Module) -> list[tuple[str, object]]:
    """(dotted name, value) of every global or closure value ``fn`` reads, in source order: its
    body and its parameters' defaults (a module's attribute is followed to the value it names)."""
    func = tree.body[0]
    local = {a.arg for a in ast.walk(func.args) if isinstance(a, ast.arg)}
    local |= {n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    scope = dict(fn.__globals__)
    scope.update(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__ or ())))
    visitor = _Reads(local)
    for node in [*func.args.defaults, *(d for d in func.args.kw_defaults if d is not None), *func.body]:
        visitor.visit(node)
    out = []
    for chain in visitor.reads:
        if chain[0] not in scope:
            continue  # a builtin (range, min) or a name Triton resolves itself
        value, depth = scope[chain[0]], 1
        while depth < len(chain) and isinstance(value, types.ModuleType) and not _is_triton(value):
            value, depth = getattr(value, chain[depth], None), depth + 1
        out.append((".".join(chain[:depth]), value))
    return out


def kernel_closure(roots) -> list[str]:
    """Sorted text of the jit functions ``roots`` and all they call, plus each constant global
    one of them reads (``function:NAME=value``)."""
    todo = [f for f in (kernel_function(r) for r in roots) if f is not None]
    seen: set[int] = set()
    entries: set[str] = set()
    while todo:
        fn = todo.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        source = _function_source(fn)
        entries.add(code_text(source))
        for name, value in _reads(fn, ast.parse(source)):
            callee = kernel_function(value)
            if callee is not None:
                todo.append(callee)
            elif (text := _value_text(value)) is not None:
                entries.add(f"{fn.__name__}:{name}={text}")
    return sorted(entries)


# ---------------------------------------------------------------------- a method's modules

def source_files(method) -> list[Path]:
    """Every file whose code a method's launches may run, found from where its class lives: the
    adapter's module; for a kernel family (``<root>.kernels.<family>.method``) the family's whole
    folder and ``kernels/common``; plus any ``kernel_modules`` a plugin names."""
    return sorted({Path(m.__file__).resolve() for m in _modules(method)})


def _modules(method) -> list[types.ModuleType]:
    module = inspect.getmodule(type(method))
    parts = module.__name__.split(".")
    names = [module.__name__]
    if "kernels" in parts[:-1]:
        k = parts.index("kernels")
        kernels_dir = Path(module.__file__).resolve().parents[len(parts) - 2 - k]
        package = ".".join(parts[: k + 1])
        for sub in ([parts[k + 1]] if len(parts) > k + 2 else []) + ["common"]:
            names += [f"{package}.{sub}" + ("" if f.stem == "__init__" else f".{f.stem}")
                      for f in sorted((kernels_dir / sub).glob("*.py"))]
    names += list(getattr(method, "kernel_modules", ()))
    return [sys.modules.get(name) or importlib.import_module(name) for name in dict.fromkeys(names)]


def _module_kernels(method) -> list:
    """Every jit function the method's modules hold (defined or imported there)."""
    return [v for m in _modules(method) for v in vars(m).values() if kernel_function(v) is not None]


def _digest(entries: list[str]) -> str:
    text = REVISION_PACKAGE.sub("kprof", "\n".join(entries))  # a revision's copy hashes as its code
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def launch_kernels(method) -> dict:
    """``{launch: kernels}`` as the method names them (empty for a method that names none)."""
    named = getattr(method, "launch_kernels", None)
    return dict(named()) if callable(named) else {}


def source_hash(method, launch: str | None = None) -> str:
    """The code ``launch`` of ``method`` compiles (every launch's, without one), hashed: what a
    tuned profile, and a measurement of the method's bytes, are valid for."""
    named = launch_kernels(method)
    roots = named.get(launch) if launch is not None else [k for ks in named.values() for k in ks]
    if not roots:
        roots = _module_kernels(method)
    entries = kernel_closure(roots)
    if not entries:  # a library call or a plain function: its modules' code is what runs
        entries = [code_text(f.read_text()) for f in source_files(method)]
    return _digest(entries)
