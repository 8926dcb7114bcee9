import pytest

from kprof.core.config_space import Constraint, LaunchSpace, Param, parse_overrides, resolve_method_config
from kprof.core.errors import ConfigError
from kprof.workloads import WorkloadShape

SHAPE = WorkloadShape(hq=8, hkv=2, n=1000, d=64, dtype="fp16")
SPACE = LaunchSpace(
    "k",
    (Param("A", (1, 2, 4), 2), Param("B", (8, 16), 8)),
    (Constraint("A*B <= 32", lambda c, s: c["A"] * c["B"] <= 32),),
)


def test_candidates_respect_constraints():
    cands = list(SPACE.candidates(SHAPE))
    assert {"A": 4, "B": 16} not in cands
    assert len(cands) == 5


def test_resolve_reports_violations_with_their_description():
    with pytest.raises(ConfigError, match=r"A\*B <= 32"):
        SPACE.resolve({"A": 4, "B": 16}, SHAPE)


def test_default_must_be_a_listed_value():
    with pytest.raises(ValueError):
        Param("X", (1, 2), 3)


def test_method_config_fills_defaults_per_launch():
    cfg = resolve_method_config({"k": SPACE}, {"k": {"A": 1}}, SHAPE)
    assert cfg == {"k": {"A": 1, "B": 8}}


@pytest.mark.parametrize("bad", ["A=3", "k.A", "k.A=x", ".A=1"])
def test_parse_overrides_rejects_malformed_items(bad):
    with pytest.raises(ConfigError):
        parse_overrides([bad])


def test_parse_overrides_nests_by_launch():
    assert parse_overrides(["p.BLOCK_N=64", "p.num_warps=8", "c.num_warps=2"]) == {
        "p": {"BLOCK_N": 64, "num_warps": 8}, "c": {"num_warps": 2}}


def test_triton_dense_smem_constraint_prunes_huge_tiles():
    from kprof.kernels.dense import LAUNCH_SPACES

    big = WorkloadShape(hq=28, hkv=4, n=32768, d=128, dtype="fp16")
    cands = list(LAUNCH_SPACES["partial"].candidates(big))
    assert cands and all(2 * c["BLOCK_N"] * 128 * 2 * c["num_stages"] <= 227 * 1024 for c in cands)
    assert not any(c["BLOCK_N"] == 256 and c["num_stages"] == 4 for c in cands)
