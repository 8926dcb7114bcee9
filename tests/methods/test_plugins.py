"""A user's own method from a package outside kprof: MODULE:NAME (function or Method subclass),
an installed package's entry point, and the error that names all three ways."""

import json
import textwrap

import pytest
from click.testing import CliRunner

from kprof.cli.main import cli

TINY = ["--rounds", "2", "--observations", "1", "--warmup-pairs", "0", "--evict-mib", "1", "--device", "cpu"]


def test_a_user_function_is_validated_and_timed(userpkg, tmp_path):
    out = tmp_path / "r.json"
    r = CliRunner().invoke(cli, ["compare", "--method", "userpkg.attn:attend", "--baseline", "math",
                                 "--out", str(out), *TINY])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    rec = doc["methods"][1]
    assert rec["label"] == "userpkg.attn:attend" and rec["validation"]["passed"]
    assert doc["speedups"][0]["candidate"] == "userpkg.attn:attend"


def test_a_wrong_user_function_fails_validation(userpkg, tmp_path):
    r = CliRunner().invoke(cli, ["check", "--method", "userpkg.attn:wrong", "--device", "cpu",
                                 "--workload", "cpu-smoke"])
    assert r.exit_code == 3 and "FAIL" in r.output.upper()


def test_a_user_method_subclass_takes_its_options(userpkg):
    from kprof.methods import get_method

    m = get_method("userpkg.attn:MyTorchAttention:scale=1.0")
    assert type(m).__name__ == "MyTorchAttention" and m.scale == 1.0
    r = CliRunner().invoke(cli, ["check", "--method", "userpkg.attn:MyTorchAttention", "--device", "cpu"])
    assert r.exit_code == 0, r.output


@pytest.fixture
def installed(userpkg, tmp_path, monkeypatch):
    """``installed(lines)``: a distribution whose entry points in group kprof.methods are ``lines``;
    what it registers stays in the test."""
    from kprof.methods import registry

    monkeypatch.setattr(registry, "METHODS", dict(registry.METHODS))
    monkeypatch.setattr(registry, "ORIGINS", dict(registry.ORIGINS))

    def install(lines: str) -> None:
        dist = tmp_path / "site" / "userpkg_methods-0.1.dist-info"
        dist.mkdir(parents=True)
        (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: userpkg-methods\nVersion: 0.1\n")
        (dist / "entry_points.txt").write_text("[kprof.methods]\n" + textwrap.dedent(lines))
        monkeypatch.syspath_prepend(str(tmp_path / "site"))

    return install


def test_an_installed_entry_point_is_listed_with_its_origin(installed):
    installed("my-torch = userpkg.attn:MyTorchAttention\nmy-fn = userpkg.attn:attend\n")
    r = CliRunner().invoke(cli, ["methods", "--json"])
    assert r.exit_code == 0, r.output
    listed = {m["name"]: m for m in json.loads(r.output)}
    assert listed["my-torch"]["origin"].startswith(
        "entry point my-torch = userpkg.attn:MyTorchAttention (userpkg-methods)")
    assert listed["my-fn"]["origin"].startswith("entry point my-fn = userpkg.attn:attend")
    assert listed["santa"]["origin"] == "built-in"
    for name in ("my-torch", "my-fn"):
        r = CliRunner().invoke(cli, ["check", "--method", name, "--device", "cpu"])
        assert r.exit_code == 0, r.output


def test_an_entry_point_that_takes_a_built_in_name_is_refused(installed):
    installed("clash = userpkg.attn:Clash\n")
    r = CliRunner().invoke(cli, ["methods"])
    assert r.exit_code == 1
    assert "names method 'santa', which kprof itself already registered" in " ".join(r.output.split())


def test_a_function_that_returns_a_tuple_is_one_line(userpkg):
    r = CliRunner().invoke(cli, ["check", "--method", "userpkg.attn:with_lse", "--device", "cpu"])
    assert r.exit_code == 1
    assert "userpkg.attn:with_lse returned a tuple: return the attention output" in " ".join(r.output.split())
    assert "Traceback" not in r.output


def test_unknown_method_names_every_way_to_bring_one():
    r = CliRunner().invoke(cli, ["check", "--method", "not-a-method", "--device", "cpu"])
    assert r.exit_code == 2
    text = " ".join(r.output.split())
    for way in ("--method MODULE:NAME", "entry point in group 'kprof.methods'", "KPROF_PLUGINS"):
        assert way in text, text


@pytest.mark.parametrize("spec, message", [
    ("nosuchpkg.mod:attend", "cannot be imported"),
    ("userpkg.attn:nothing", "has no 'nothing'"),
    ("userpkg.attn:torch", "name a Method subclass or a function"),
])
def test_bad_object_references_are_one_line(userpkg, spec, message):
    r = CliRunner().invoke(cli, ["check", "--method", spec, "--device", "cpu"])
    assert r.exit_code == 2 and message in " ".join(r.output.split()) and "Traceback" not in r.output


def test_a_wrong_user_function_stops_compare_before_timing_unless_kept(userpkg, tmp_path, monkeypatch):
    from kprof.measure import harness

    timed = []
    real = harness.Harness.paired
    monkeypatch.setattr(harness.Harness, "paired", lambda self, *a, **k: timed.append(1) or real(self, *a, **k))
    out = tmp_path / "r.json"
    args = ["compare", "--method", "userpkg.attn:wrong", "--baseline", "math", "--out", str(out), *TINY]
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 3 and not timed and not out.exists(), r.output
    assert "userpkg.attn:wrong: output differs from the reference" in " ".join(r.output.split())
    assert "--keep-invalid" in r.output and "Traceback" not in r.output
    from kprof.cli import console

    monkeypatch.setattr(console.console, "width", 100)  # a narrow terminal: the valid column stays
    r = CliRunner().invoke(cli, args + ["--keep-invalid"])
    assert r.exit_code == 3 and timed and out.exists(), r.output
    row = next(line for line in r.output.splitlines() if line.strip().startswith("userpkg.attn:"))
    assert "FAIL" in row and len(row) <= 100, r.output
