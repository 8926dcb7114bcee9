"""SANTA++ (representative-key team sampling): reference, preparation, layout cache, kernels.

Import from the submodules (``preparation``, ``cache``...): the package itself loads nothing.
"""
