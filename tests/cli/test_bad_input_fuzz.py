"""Property: whatever bad value lands in whichever option of whichever command, kprof answers
with a failure code and at most a few lines, never a traceback, and leaves every file that was
there before as it was.

Each example takes a command whose other arguments are valid and cheap, and puts one bad value
in one of its slots: a number, a path (missing, a folder, under a file, read-only), a method or
workload spec, or a JSON document. The example budget is fixed and derandomised, so CI runs the
same examples every time; raise ``KPROF_FUZZ_EXAMPLES`` and set ``KPROF_FUZZ_RANDOM=1`` to search
further.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from kprof.cli.main import cli

RESULT = Path(__file__).parents[1] / "fixtures" / "results" / "h200-result-v1.json"
EXAMPLES = int(os.environ.get("KPROF_FUZZ_EXAMPLES", "300"))
TINY = ["--device", "cpu", "--warmup-pairs", "0", "--evict-mib", "1"]
READ_ONLY = "/proc/kprof-read-only"  # no one, root included, makes a file there

# Each command: its arguments with {slot} placeholders, and each slot's valid value.
COMMANDS = {
    "compare": (["compare", "--method", "{method}", "--baseline", "math", "--workload", "{workload}", "--rounds",
                 "{rounds}", "--observations", "{observations}", "--out", "{out}", *TINY],
                {"method": "math", "workload": "cpu-smoke", "rounds": "2", "observations": "1", "out": "new.json"}),
    "compare --precision": (["compare", "--method", "math", "--baseline", "math", "--precision", "{precision}",
                             "--max-time", "{max_time}", *TINY],
                            {"precision": "1%", "max_time": "1"}),
    "stages": (["stages", "--method", "{method}", "--stage-observations", "{observations}", "--out", "{out}", *TINY],
               {"method": "triton-dense", "observations": "1", "out": "new.json"}),
    "check": (["check", "--method", "{method}", "--workload", "{workload}", "--device", "cpu"],
              {"method": "math", "workload": "cpu-smoke"}),
    "validate": (["validate", "--method", "{method}", "--realisations", "{count}", "--device", "cpu"],
                 {"method": "math", "count": "1"}),
    "tune": (["tune", "--method", "{method}", "--max-configs", "{count}", "--finalists", "{count}", "--out-dir",
              "{out_dir}", "--device", "cpu"],
             {"method": "triton-dense", "count": "1", "out_dir": "tuned"}),
    "gate history": (["gate", "--baseline", "{result}", "--candidate", "{result}", "--max-regression", "{percent}",
                      "--summary-md", "{summary}"],
                     {"result": "r.json", "percent": "3%", "summary": "new.md"}),
    "gate --against": (["gate", "--against", "HEAD", "--method", "{method}", "--rounds", "{rounds}", "--out", "{out}",
                        *TINY],
                       {"method": "math", "rounds": "2", "out": "new.json"}),
    "report": (["report", "{result}", "--plot", "{out}"], {"result": "r.json", "out": "new.png"}),
    "workload info": (["workload", "info", "{workload}"], {"workload": "cpu-smoke"}),
    "capture": (["capture", "--synthetic", "{workload}", "--out", "{out}"], {"workload": "cpu-smoke", "out": "w.st"}),
    "ncu": (["ncu", "--method", "{method}", "--workload", "{workload}", "--captures", "{count}"],
            {"method": "math", "workload": "cpu-smoke", "count": "1"}),
    "ncu import": (["ncu", "import", "{result}"], {"result": "r.json"}),
}

BAD_NUMBERS = ["0", "-1", "abc", "", "nan", "inf", "2.5", "1e999", "99999999999999999999"]
BAD_COUNTS = BAD_NUMBERS[:-1]  # a huge count of realisations, configs or captures is slow, not wrong
BAD_PERCENTS = ["0", "-5%", "50%", "abc", "nan", "%", "1e999"]
BAD_METHODS = ["nope", "trtion-dense", "santa:q=1", "math:p=1", "triton-dense:partial.NOPE=1",
               "triton-dense:partial.BLOCK_N=3", "santa@", "nosuchmodule:fn", "os:path", "json:loads@",
               ":", "=missing-label"]
BAD_WORKLOADS = ["nope", "synthetic:", "synthetic:hq=0,hkv=1,d=64,n=16,dtype=fp32", "synthetic:hq=3,hkv=2,d=64,n=16,"
                 "dtype=fp32", "synthetic:hq=2,hkv=1,d=64,n=16,dtype=int3", "missing.safetensors", "folder",
                 "afile/w.safetensors", "r.json"]
BAD_OUTPUTS = ["folder", "afile/x.out", f"{READ_ONLY}/x.out", "existing.txt"]
BAD_INPUTS = ["missing.json", "folder", "afile/x.json", "doc.json", "existing.txt"]

SLOT_KINDS = {
    "method": BAD_METHODS, "workload": BAD_WORKLOADS, "rounds": BAD_NUMBERS, "observations": BAD_NUMBERS,
    "count": BAD_COUNTS, "precision": BAD_PERCENTS, "percent": BAD_PERCENTS,
    "max_time": ["0", "-1", "abc", "", "nan"],
    "out": BAD_OUTPUTS, "summary": BAD_OUTPUTS[:3], "out_dir": ["afile", f"{READ_ONLY}/tuned", "existing.txt"],
    "result": BAD_INPUTS,
}

KNOWN = {"math", "flash", "cudnn", "triton-dense", "triton-decode", "santa", "santa-fused", "fathom", "scan32",
         "sparq16", "scan-full", "cpu-smoke", "qwen2.5-7b-l14-32k", "qwen2.5-7b-l14-8k", "qwen3-8b-128k", "qwen3-8b-1m"}
names = st.from_regex(r"\A[a-z][a-z0-9_.-]{0,12}\Z").filter(lambda n: n not in KNOWN)
not_a_number = st.text(alphabet="abxyz%-.,e ", min_size=1, max_size=6)
GENERATED = {  # beside each slot's listed values, drawn ones of the same kind
    "method": names | st.builds("{}:no_{}=1".format, st.sampled_from(["math", "santa", "triton-dense"]), names),
    "workload": names | st.builds("synthetic:hq={},hkv={},d={},n={},dtype=fp32".format,
                                  *[st.integers(-2, 3)] * 2, st.sampled_from([0, 3, 64]), st.integers(-5, 0)),
    "rounds": st.integers(max_value=0).map(str) | not_a_number,
    "observations": st.integers(max_value=0).map(str) | not_a_number,
    "count": st.integers(max_value=-1).map(str) | not_a_number,
    "precision": st.floats(min_value=0.5, allow_nan=False).map("{:g}".format) | not_a_number,
    "percent": st.floats(max_value=0, allow_nan=False).map("{:g}%".format) | not_a_number,
}

json_documents = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def _result_like(edit: dict) -> dict:
    """The fixture Result with some top-level fields replaced: a document that is nearly right."""
    doc = json.loads(RESULT.read_text())
    doc.update(edit)
    return doc


documents = st.one_of(
    json_documents,
    st.dictionaries(st.sampled_from(["schema", "summaries", "methods", "kind", "speedups", "protocol", "partial"]),
                    json_documents, min_size=1, max_size=3).map(_result_like),
)


def _scene(folder: Path, document) -> None:
    """The files every example may name: a Result, a folder, a file standing where a folder is
    expected, an existing file, and the generated document."""
    shutil.copy(RESULT, folder / "r.json")
    shutil.copy(RESULT.with_suffix(".obs.npz"), folder / "r.obs.npz")
    (folder / "folder").mkdir()
    (folder / "afile").write_text("a file, not a folder")
    (folder / "existing.txt").write_text("keep me")
    (folder / "doc.json").write_text(json.dumps(document))


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@st.composite
def bad_invocations(draw):
    name = draw(st.sampled_from(sorted(COMMANDS)))
    template, valid = COMMANDS[name]
    slot = draw(st.sampled_from(sorted(valid)))
    listed = st.sampled_from(SLOT_KINDS[slot])
    bad = draw(listed | GENERATED[slot] if slot in GENERATED else listed)
    values = valid | {slot: bad}
    args = [a.format(**values) if "{" in a else a for a in template]
    return name, slot, bad, args


@settings(max_examples=EXAMPLES, deadline=None, derandomize=not os.environ.get("KPROF_FUZZ_RANDOM"), database=None,
          phases=[Phase.explicit, Phase.generate],  # each example is one bad slot already: no shrinking
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(invocation=bad_invocations(), document=documents)
def test_a_bad_value_anywhere_fails_cleanly_and_changes_no_file(invocation, document, monkeypatch):
    name, slot, bad, args = invocation
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _scene(folder, document)
        monkeypatch.chdir(folder)
        monkeypatch.setenv("KPROF_HOME", str(folder / "home"))
        before = _snapshot(folder)
        r = CliRunner().invoke(cli, args)
        what = f"{name}: {slot}={bad!r}: {' '.join(args)}\n{r.output}"
        assert r.exit_code in {1, 2, 3, 4, 5}, what
        assert "Traceback" not in r.output, what
        assert r.exception is None or isinstance(r.exception, SystemExit), f"{what}\n{r.exception!r}"
        shown = [line for line in r.output.splitlines() if line.strip()]
        assert len(shown) <= 6, what
        after = _snapshot(folder)
        assert {k: v for k, v in after.items() if k in before} == before, f"{what}\na file that was there changed"
