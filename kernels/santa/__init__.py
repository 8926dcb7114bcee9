"""SANTA++ (representative-key team sampling): reference, preparation, layout cache."""

from kprof.kernels.santa.cache import CacheOutcome, load_or_build
from kprof.kernels.santa.preparation import SantaArtifacts, SantaSettings, TeamLayout, build_layout, pack

__all__ = ["CacheOutcome", "SantaArtifacts", "SantaSettings", "TeamLayout", "build_layout", "load_or_build", "pack"]
