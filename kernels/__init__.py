"""Triton kernels of kprof (imported as ``kprof.kernels``).

Importing this package first decides whether Triton runs interpreted: without a CUDA device it
sets ``TRITON_INTERPRET=1`` so every kernel runs on the CPU (slowly, but correctly).
"""

from kprof.core.target import configure_triton

INTERPRETED = configure_triton()
