import torch

from kprof.kernels.fathom.reference import dequantize_prefix, pack_planes, quantize
from kprof.kernels.fathom.store import FathomStore


def test_store_matches_the_reference_bit_for_bit(make_workload, target):
    w = make_workload(8, 2, 200, 32, seed=4)
    store = FathomStore.build(w.k.to(target.device))
    assert store.planes.shape == (2, 32, 4, 4) and store.scales.shape == (2, 32, 4)
    for h in range(2):
        codes, scales = quantize(w.k[h])
        assert torch.equal(store.planes[h].cpu(), pack_planes(codes))
        assert torch.equal(store.scales[h].cpu(), scales)
    assert torch.allclose(store.var.cpu(), w.k.double().var(dim=1).float())


def test_klt_basis_rotates_and_orders_by_variance(make_workload):
    w = make_workload(4, 1, 512, 16, seed=2)
    w.k[0] *= torch.linspace(0.2, 4.0, 16)  # anisotropic keys
    store = FathomStore.build(w.k, basis="klt")
    lam = store.var[0]
    assert torch.all(lam[:-1] >= lam[1:]), "eigenvalues in descending order"
    x = (w.k[0].double() - store.mean[0].double()) @ store.rotation[0].double()
    codes, scales = quantize(x)
    assert torch.equal(store.planes[0], pack_planes(codes))
    # scores are preserved by the rotation up to the constant q . mu
    q = torch.randn(4, 16, generator=torch.Generator().manual_seed(1))
    full = dequantize_prefix(codes, scales, torch.full((16,), 4))
    approx = store.query(q).double() @ full.T + (q.double() @ store.mean[0].double())[:, None]
    exact = q.double() @ w.k[0].double().T
    assert (approx - exact).abs().max() < 0.1 * exact.abs().max()
