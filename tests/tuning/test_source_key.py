"""A tune key's source hashes the jit functions a launch compiles (and what they call and read),
so edits anywhere else keep tuned profiles valid and a changed token in them does not."""

import importlib
import itertools
import textwrap

import pytest

from kprof.methods import get_method
from kprof.tuning.source_key import source_files, source_hash

KERNELS = '''
    """Two launches' kernels and a helper they share."""
    import triton
    import triton.language as tl

    SCALE = tl.constexpr(2)
    BIAS = 1
    ACC = tl.float32


    @triton.jit
    def helper(x):
        """Doubles x."""
        return (x * SCALE + BIAS).to(ACC)


    @triton.jit
    def main_kernel(X, N: tl.constexpr):
        """The main launch."""
        offs = tl.arange(0, N)  # one tile
        tl.store(X + offs, helper(tl.load(X + offs)))


    @triton.jit
    def side_kernel(X, N: tl.constexpr):
        offs = tl.arange(0, N)
        tl.store(X + offs, tl.load(X + offs) + 1)
'''

ADAPTER = '''
    """The toy's Method adapter."""
    from kprof.core.config_space import LaunchSpace, Param
    from kprof.methods.base import Method

    from .kern import main_kernel, side_kernel
    from .reference import reference

    HELP = "elements per program"


    class Toy(Method):
        name = "toy"
        summary = "a toy with two launches"

        def config_space(self):
            return {"main": LaunchSpace("main", (Param("N", (16, 32), 16, HELP),)),
                    "side": LaunchSpace("side", (Param("N", (16, 32), 16),))}

        def launch_kernels(self):
            return {"main": (main_kernel,), "side": (side_kernel,)}

        def _prepare(self, workload, config):
            return reference(workload)
'''

REFERENCE = '''
    def reference(workload):
        """fp64 output."""
        return workload.q.double()
'''

_count = itertools.count()


def _toy(tmp_path, monkeypatch, kern=KERNELS, adapter=ADAPTER, reference=REFERENCE):
    """The toy method loaded from its own freshly written package."""
    name = f"toy_pkg_{next(_count)}"
    folder = tmp_path / name
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    for module, text in (("kern", kern), ("adapter", adapter), ("reference", reference)):
        (folder / f"{module}.py").write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    return importlib.import_module(f"{name}.adapter").Toy()


def _keys(method) -> dict:
    return {launch: source_hash(method, launch) for launch in ("main", "side")}


@pytest.mark.parametrize("where, old, new", [
    ("kern", '"""Doubles x."""', '"""Twice x, said otherwise."""'),
    ("kern", "# one tile", "# a tile, reworded"),
    ("kern", "offs = tl.arange(0, N)  # one tile", "offs = tl.arange(\n        0, N)"),
    ("adapter", 'HELP = "elements per program"', 'HELP = "how many elements one program handles"'),
    ("adapter", 'summary = "a toy with two launches"', 'summary = "another summary"'),
    ("adapter", "return reference(workload)", "return reference(workload) * 1"),
    ("reference", "return workload.q.double()", "return workload.q.double() * 2"),
    ("kern", "BIAS = 1\n", "BIAS = 1\n    UNUSED = tl.constexpr(7)\n"),
])
def test_edits_outside_the_compiled_code_keep_every_key(tmp_path, monkeypatch, where, old, new):
    texts = {"kern": KERNELS, "adapter": ADAPTER, "reference": REFERENCE}
    before = _keys(_toy(tmp_path, monkeypatch, **texts))
    assert texts[where].count(old) == 1
    texts[where] = texts[where].replace(old, new)
    assert _keys(_toy(tmp_path, monkeypatch, **texts)) == before


@pytest.mark.parametrize("old, new, moved", [
    ("tl.store(X + offs, helper(", "tl.store(X + offs + 0, helper(", {"main"}),  # the launched kernel
    ("(x * SCALE + BIAS)", "(x * SCALE - BIAS)", {"main"}),  # a jit function it calls
    ("SCALE = tl.constexpr(2)", "SCALE = tl.constexpr(3)", {"main"}),  # a constexpr global the callee reads
    ("BIAS = 1", "BIAS = 2", {"main"}),  # a plain global it reads
    ("ACC = tl.float32", "ACC = tl.float16", {"main"}),  # a dtype global it reads
    ("tl.load(X + offs) + 1", "tl.load(X + offs) + 2", {"side"}),  # the other launch's kernel only
])
def test_one_token_of_a_launchs_compiled_code_changes_its_key_only(tmp_path, monkeypatch, old, new, moved):
    before = _keys(_toy(tmp_path, monkeypatch))
    assert KERNELS.count(old) == 1
    after = _keys(_toy(tmp_path, monkeypatch, kern=KERNELS.replace(old, new)))
    assert {launch for launch in before if before[launch] != after[launch]} == moved


def test_a_launch_that_names_no_kernels_is_keyed_on_its_modules_jit_functions(tmp_path, monkeypatch):
    unnamed = ADAPTER.replace('return {"main": (main_kernel,), "side": (side_kernel,)}', "return {}")
    before = _toy(tmp_path, monkeypatch, adapter=unnamed)
    assert source_hash(before, "main") == source_hash(before, "side"), "both: every jit function of the module"
    edited = _toy(tmp_path, monkeypatch, kern=KERNELS.replace("+ 1)", "+ 2)"), adapter=unnamed)
    assert source_hash(edited, "main") != source_hash(before, "main")
    reworded = _toy(tmp_path, monkeypatch, adapter=unnamed.replace("elements per program", "per program"))
    assert source_hash(reworded, "main") == source_hash(before, "main")


def test_every_launch_of_a_built_in_method_names_its_kernels():
    for name in ("santa", "santa-fused", "triton-dense", "triton-decode", "fathom", "scan32", "sparq16", "scan-full"):
        method = get_method(name)
        assert set(method.launch_kernels()) == set(method.config_space()), name
        keys = {launch: source_hash(method, launch) for launch in method.config_space()}
        assert len(set(keys.values())) == len(keys), f"{name}: each launch compiles its own code: {keys}"


def test_launches_sharing_a_kernel_share_its_key():
    """santa's reduce and fathom's attend merge both launch kernels/common's split_kv_combine."""
    assert source_hash(get_method("santa"), "reduce") != source_hash(get_method("fathom"), "attend")
    assert source_hash(get_method("fathom"), "scan") == source_hash(get_method("scan32"), "scan")


def test_a_users_tunable_triton_function_is_keyed_on_its_modules_kernels(userpkg, monkeypatch):
    method = get_method("userpkg.triton_decode:decode")
    key = source_hash(method, "call")
    import userpkg.triton_decode as module

    from kprof.tuning import source_key

    real = source_key._function_source
    monkeypatch.setattr(source_key, "_function_source",
                        lambda fn: real(fn).replace("acc * alpha", "acc * alpha * 1") if fn.__name__ == "_decode"
                        else real(fn))
    assert source_hash(method, "call") != key
    assert module.__file__ in {str(f) for f in source_files(method)}


def test_a_function_without_kernels_is_keyed_on_its_modules_code(userpkg):
    method = get_method("userpkg.attn:tunable_attend")
    assert [f.name for f in source_files(method)] == ["attn.py"]
    assert source_hash(method, "call") == source_hash(method)
    assert [f.name for f in source_files(get_method("flash"))] == ["sdpa.py"]


def test_a_revisions_copy_hashes_as_its_code(monkeypatch):
    """A revision loaded as ``kprof_at_<sha>`` (kprof.methods.revision) keys as the same code."""
    from kprof.tuning import source_key

    method = get_method("triton-dense")
    real = source_key._function_source
    keys = []
    for package in ("kprof", "kprof_at_0123456789ab"):
        monkeypatch.setattr(source_key, "_function_source", lambda fn, p=package: real(fn).replace("tl.", f"{p}.tl."))
        keys.append(source_hash(method, "partial"))
    assert keys[0] == keys[1]


def test_the_interpreter_and_the_compiler_key_differently_where_a_kernel_reads_the_difference():
    """kernels/common/matmul.py's dot upcasts under the interpreter only: a CPU key is not a GPU key."""
    from kprof.kernels.common import matmul

    assert f"dot:_UPCAST_BF16={matmul._UPCAST_BF16.value!r}" in source_key_entries(get_method("santa"), "score")


def source_key_entries(method, launch):
    from kprof.tuning.source_key import kernel_closure

    return kernel_closure(method.launch_kernels()[launch])


def test_code_text_ignores_comments_and_docstrings_but_not_code():
    from kprof.tuning.source_key import code_text

    base = 'def f(x):\n    """Doc."""\n    return x + 1  # one\n'
    reworded = '# header\ndef f(x):\n    """Other words,\n    two lines."""\n    return (x +\n            1)\n'
    changed = 'def f(x):\n    """Doc."""\n    return x + 2\n'
    assert code_text(base) == code_text(reworded)
    assert code_text(base) != code_text(changed)
    assert "Doc" not in code_text(base) and "one" not in code_text(base)


def test_code_text_ignores_the_empty_ast_fields_newer_pythons_add():
    """Profiles are measured on the device's Python and used on others: 3.12 adds an empty
    ``type_params`` to every function, which must not change the code text (an ``ast.dump``-based
    text fails this; the cross-interpreter test below covers ``ast.unparse``'s f-string quoting)."""
    import ast

    from kprof.tuning.source_key import _canonical

    tree = ast.parse("def f(x):\n    return x\n")
    plain = _canonical(tree)
    fn = tree.body[0]
    fn._fields = (*fn._fields, "type_params")
    fn.type_params = []
    assert _canonical(tree) == plain


def _other_pythons() -> list[str]:
    import glob
    import os
    import shutil
    import sys

    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    found = [shutil.which(f"python3.{m}") for m in range(8, 16)] + glob.glob(f"{root}/versions/3.*/bin/python")
    here = os.path.realpath(sys.executable)
    return sorted({os.path.realpath(p) for p in found if p} - {here})


def test_code_text_is_the_same_under_every_installed_python():
    """The real check behind the one above: the code text of a module with nested-quote f-strings
    (where ``ast.unparse`` differs between 3.11 and 3.12) computed by each other CPython >= 3.9
    installed here equals this interpreter's."""
    import inspect
    import subprocess

    import kprof.kernels.fathom.method as fathom_method
    from kprof.tuning import source_key

    script = ("import ast, sys\n" + inspect.getsource(source_key._canonical) + inspect.getsource(source_key.code_text)
              + "sys.stdout.write(code_text(open(sys.argv[1]).read()))\n")
    script = script.replace("def code_text(source: str) -> str:", "def code_text(source):")
    script = script.replace("def _canonical(node) -> str:", "def _canonical(node):")
    here = source_key.code_text(inspect.getsource(fathom_method))
    checked = 0
    for exe in _other_pythons():
        version = subprocess.run([exe, "-c", "import sys; print(sys.version_info[:2] >= (3, 9))"],
                                 capture_output=True, text=True).stdout.strip()
        if version != "True":
            continue
        out = subprocess.run([exe, "-c", script, fathom_method.__file__], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert out.stdout == here, f"{exe} computes another code text"
        checked += 1
    if not checked:
        pytest.skip("no other CPython >= 3.9 installed here to compare with")
