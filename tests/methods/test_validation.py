import pytest
import torch

from kprof.methods.validation import compare_outputs


def test_identical_outputs_pass_and_perturbed_fail():
    g = torch.Generator().manual_seed(0)
    ref = torch.randn(8, 16, generator=g, dtype=torch.float64)
    assert compare_outputs(ref.float(), ref).passed
    bad = ref.float().clone()
    bad[3, 4] += 0.5
    r = compare_outputs(bad, ref)
    assert not r.passed and abs(r.max_abs_error - 0.5) < 1e-5


def test_nan_never_passes():
    ref = torch.ones(4, 4, dtype=torch.float64)
    out = torch.ones(4, 4)
    out[0, 0] = float("nan")
    r = compare_outputs(out, ref, tolerance=1.0)
    assert not r.passed and r.non_finite == 1


def test_tolerance_follows_dtype():
    ref = torch.randn(4, 4, dtype=torch.float64)
    assert compare_outputs(ref.half(), ref).tolerance == 1e-2
    assert compare_outputs(ref.float(), ref).tolerance == 1e-5


def test_a_wider_output_is_not_held_to_the_loosest_tolerance_and_a_complex_one_is_refused():
    """fp32 inputs, an fp64 output 0.5% off: it passed under the 1e-2 once given to unknown dtypes."""
    ref = torch.randn(8, 64, dtype=torch.float64)
    assert not compare_outputs(ref * 1.005, ref).passed
    assert compare_outputs((ref * (1 + 1e-7)).to(torch.float32), ref).passed
    with pytest.raises(ValueError, match="attention outputs are real"):
        compare_outputs(ref.to(torch.complex64), ref)
