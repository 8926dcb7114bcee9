"""bound_launch: the first call goes through Triton, later ones straight to the compiled launcher
with the arguments Triton itself would pass."""

import inspect

import pytest
import torch
import triton
import triton.language as tl

from kprof.kernels.common import bound_launch as bl


class _Compiled:
    """Stands for a CompiledKernel: records what its launcher was given."""

    def __init__(self):
        self.function, self.packed_metadata, self.calls = object(), object(), []

    def run(self, *args):
        self.calls.append(args)


class _Kernel:
    """Stands for a JITFunction: ``kernel[grid](...)`` is Triton's dispatch, counted."""

    def __init__(self, compiled):
        self.compiled, self.dispatches = compiled, []

        def fn(X, n, scale, BLOCK: tl.constexpr = 64, EVEN: tl.constexpr = True):
            pass

        self.fn = fn

    def __getitem__(self, grid):
        def dispatch(*args, **kwargs):
            self.dispatches.append((grid, args, kwargs))
            return self.compiled
        return dispatch


@pytest.fixture
def fake_gpu(monkeypatch):
    monkeypatch.setattr(bl, "current_stream_source", lambda: ((lambda device: 1000 + device), 3))
    monkeypatch.setattr(bl, "_triton_at_least", lambda major, minor: True)
    compiled = _Compiled()
    return compiled, _Kernel(compiled)


def test_later_calls_skip_dispatch_with_arguments_in_declaration_order(fake_gpu):
    compiled, kernel = fake_gpu
    x = torch.randn(8)
    launch = bl.bound_launch(kernel, (4, 2), x, 8, scale=0.5, BLOCK=32, num_warps=4, num_stages=2)
    launch()
    assert len(kernel.dispatches) == 1 and compiled.calls == [] and launch.direct
    launch()
    launch()
    assert len(kernel.dispatches) == 1, "Triton's dispatch ran again"
    grid_and_stream = (4, 2, 1, 1003, compiled.function, compiled.packed_metadata, None, None, None)
    # every declared argument, constexprs and defaults included; launch options left out
    assert compiled.calls == [grid_and_stream + (x, 8, 0.5, 32, True)] * 2


def test_launch_hooks_send_calls_through_triton(fake_gpu, monkeypatch):
    compiled, kernel = fake_gpu
    launch = bl.bound_launch(kernel, (1,), torch.randn(8), 8, 1.0)
    launch()
    monkeypatch.setattr(bl, "_launch_hooks_registered", lambda: True)
    launch()
    assert len(kernel.dispatches) == 2 and compiled.calls == []


def test_no_direct_path_before_triton_3_3_or_for_an_object_without_a_launcher(monkeypatch):
    monkeypatch.setattr(bl, "current_stream_source", lambda: ((lambda device: 0), 0))
    compiled = _Compiled()
    kernel = _Kernel(compiled)
    monkeypatch.setattr(bl, "_triton_at_least", lambda major, minor: False)
    old = bl.bound_launch(kernel, (1,), torch.randn(8), 8, 1.0)
    old()
    old()
    assert not old.direct and len(kernel.dispatches) == 2
    monkeypatch.setattr(bl, "_triton_at_least", lambda major, minor: True)
    kernel.compiled = None  # the interpreter returns no compiled kernel
    interp = bl.bound_launch(kernel, (1,), torch.randn(8), 8, 1.0)
    interp()
    interp()
    assert not interp.direct


@triton.jit
def _scale(X, Y, n, S: tl.constexpr = 2, BLOCK: tl.constexpr = 16):
    o = tl.arange(0, BLOCK)
    tl.store(Y + o, tl.load(X + o, mask=o < n) * S, mask=o < n)


def test_real_kernel_is_right_on_every_call_and_direct_only_when_compiled(target):
    x = torch.randn(16, device=target.device)
    y = torch.full((16,), float("nan"), device=target.device)
    launch = bl.bound_launch(_scale, (1,), x, y, 16, S=3, num_warps=1)
    for i in range(3):
        x.copy_(torch.randn(16))  # the launch reads the bound buffer, refilled in place
        y.fill_(float("nan"))
        launch()
        assert torch.equal(y.cpu(), 3 * x.cpu()), i
    assert launch.direct == (not target.interpreted and bl._triton_at_least(3, 4))


@pytest.mark.gpu
def test_direct_launches_are_captured_into_cuda_graphs(target):
    """The direct path asks for the current stream on every call: a capture must record it."""
    x = torch.randn(16, device=target.device)
    y = torch.full((16,), float("nan"), device=target.device)
    launch = bl.bound_launch(_scale, (1,), x, y, 16, num_warps=1)
    launch()
    assert launch.direct
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        launch()
    for _ in range(3):
        x.copy_(torch.randn(16))
        y.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(y.cpu(), 2 * x.cpu())


def test_installed_triton_launches_the_way_the_direct_path_copies():
    """Fails when a Triton release changes how JITFunction.run calls the compiled launcher: the
    direct path must then be re-checked before it is trusted."""
    if not bl._triton_at_least(3, 4):
        pytest.skip("Triton before 3.4 takes the dispatch path only")
    source = " ".join(inspect.getsource(triton.runtime.jit.JITFunction.run).split())
    call = ("kernel.run(grid_0, grid_1, grid_2, stream, kernel.function, kernel.packed_metadata, launch_metadata, "
            "knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook, *bound_args.values())")
    assert call in source
