import json

import pytest
import torch
from safetensors.torch import save_file

from kprof.core.errors import WorkloadError
from kprof.workloads import load, save


def test_round_trip_preserves_tensors_metadata_and_hash(tmp_path, make_workload):
    w = make_workload(8, 2, 100, 64, torch.float16, seed=3)
    w.metadata["layer"] = 14
    path = tmp_path / "w.safetensors"
    digest = save(w, path)
    back = load(path)
    assert digest == w.content_hash() == back.content_hash()
    for name in ("q", "k", "v", "positions"):
        assert torch.equal(getattr(w, name), getattr(back, name))
    assert back.metadata == w.metadata
    assert back.query_position == w.query_position
    assert back.dtype == torch.float16


def test_missing_file_names_the_path(tmp_path):
    with pytest.raises(WorkloadError, match="does not exist"):
        load(tmp_path / "nope.safetensors")


def test_not_a_safetensors_file(tmp_path):
    p = tmp_path / "junk.safetensors"
    p.write_bytes(b"this is not safetensors at all")
    with pytest.raises(WorkloadError, match="not a readable safetensors"):
        load(p)


def _write_raw(path, tensors, meta):
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(path), metadata=meta)


def _good_parts(make_workload):
    w = make_workload(4, 2, 16, 16, seed=1)
    tensors = {"q": w.q, "k": w.k, "v": w.v, "positions": w.positions}
    meta = {"kprof.format": "kprof-workload/1", "kprof.query_position": "15",
            "kprof.content_hash": w.content_hash(), "kprof.metadata": json.dumps({})}
    return tensors, meta


def test_foreign_safetensors_is_refused(tmp_path, make_workload):
    tensors, meta = _good_parts(make_workload)
    del meta["kprof.format"]
    _write_raw(tmp_path / "x.safetensors", tensors, meta)
    with pytest.raises(WorkloadError, match="not a kprof workload"):
        load(tmp_path / "x.safetensors")


def test_missing_tensor(tmp_path, make_workload):
    tensors, meta = _good_parts(make_workload)
    del tensors["v"]
    _write_raw(tmp_path / "x.safetensors", tensors, meta)
    with pytest.raises(WorkloadError, match="lacks tensor"):
        load(tmp_path / "x.safetensors")


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda t: t.update(q=t["q"][None]), r"q must be \[Hq, d\]"),
        (lambda t: t.update(v=t["v"][:, :8]), "differ in shape"),
        (lambda t: t.update(q=torch.randn(4, 32)), "head dim mismatch"),
        (lambda t: t.update(q=torch.randn(3, 16)), "GQA needs Hq divisible by Hkv"),
        (lambda t: t.update(k=t["k"].half(), v=t["v"].half()), "dtypes differ"),
        (lambda t: t.update(q=t["q"].double(), k=t["k"].double(), v=t["v"].double()), "supported are"),
        (lambda t: t.update(positions=torch.arange(5)), "positions must be"),
        (lambda t: t.update(positions=torch.arange(16, dtype=torch.int32)), "positions must be int64"),
    ],
)
def test_shape_and_dtype_errors_name_the_problem(tmp_path, make_workload, mutate, message):
    tensors, meta = _good_parts(make_workload)
    mutate(tensors)
    _write_raw(tmp_path / "x.safetensors", tensors, meta)
    with pytest.raises(WorkloadError, match=message):
        load(tmp_path / "x.safetensors")


def test_hash_mismatch_detects_modified_content(tmp_path, make_workload):
    tensors, meta = _good_parts(make_workload)
    tensors["k"] = tensors["k"].clone()
    tensors["k"][0, 3, 5] += 1.0  # one element changed after the hash was taken
    _write_raw(tmp_path / "x.safetensors", tensors, meta)
    with pytest.raises(WorkloadError, match="content hash mismatch"):
        load(tmp_path / "x.safetensors")
    assert load(tmp_path / "x.safetensors", verify_hash=False).k[0, 3, 5] == tensors["k"][0, 3, 5]


def test_malformed_metadata(tmp_path, make_workload):
    tensors, meta = _good_parts(make_workload)
    meta["kprof.query_position"] = "last"
    _write_raw(tmp_path / "x.safetensors", tensors, meta)
    with pytest.raises(WorkloadError, match="malformed kprof metadata"):
        load(tmp_path / "x.safetensors")


def test_failed_save_leaves_existing_file_intact(tmp_path, make_workload, monkeypatch):
    path = tmp_path / "w.safetensors"
    first = make_workload(4, 2, 16, 16, seed=1)
    save(first, path)
    import kprof.workloads.storage as storage

    def crash(tensors, filename, metadata=None):
        with open(filename, "wb") as fh:
            fh.write(b"partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(storage, "save_file", crash)
    with pytest.raises(KeyboardInterrupt):
        save(make_workload(4, 2, 16, 16, seed=2), path)
    assert load(path).content_hash() == first.content_hash()
    assert [p.name for p in tmp_path.iterdir()] == ["w.safetensors"]


def test_resolve_shape_names_a_spec_without_synthesising_it_and_reads_files(tmp_path, make_workload, monkeypatch):
    import kprof.workloads.resolve as resolve
    from kprof.workloads import SPECS, resolve_shape

    monkeypatch.setattr(resolve, "synthesize", lambda *a, **k: pytest.fail("a spec's shape must not synthesise it"))
    assert resolve_shape("qwen3-8b-1m") == SPECS["qwen3-8b-1m"].shape
    w = make_workload(8, 2, 100, 64, torch.float16, seed=3)
    save(w, tmp_path / "w.safetensors")
    assert resolve_shape(str(tmp_path / "w.safetensors")) == w.shape
