"""Whether JAX is installed: the optional extra that PyTensor's JAX backend needs.

A package whose PyTensor Ops have JAX implementations imports them when it builds a
model and this is True (``jax_funcify`` must know an Op before PyTensor converts a
graph, and JAX is too heavy to import with ``dpinfer``).
"""

from __future__ import annotations

import functools
import importlib.util

__all__ = ["jax_installed"]


@functools.cache
def jax_installed() -> bool:
    """Whether ``import jax`` would find JAX (the ``jax`` extra of dpinfer)."""
    return importlib.util.find_spec("jax") is not None
