"""NUTS compiled once per PyMC model: its log-density and gradient are reused when sampled again.

``pm.sample`` compiles the model's joint log-density and its gradient (PyTensor's graph
rewrites, then the C code from PyTensor's on-disk cache) every time it is called; with the
C code cached that is still about a second for the examples' models. A model sampled
again, with the values of its ``pm.Data`` changed by ``pm.set_data``, has the same graph:
the compiled function reads the data at run time, so :func:`compiled_once` hands ``pm.sample``
the function compiled the first time. The draws are those of a fresh compilation, bit for
bit (the same graph compiles to the same function).

The function is cached per model object (weakly: it goes with the model) and per compile
options, and only while the model's shape stays the same: its variables, and the shapes
of its data (data of another shape may change the shapes of variables).
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator

#: The compiled log-density and gradient of each model, by model and compile options.
_COMPILED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


@contextlib.contextmanager
def compiled_once(pymc_model) -> Iterator[None]:
    """Within this context, ``pymc_model`` compiles its log-density and gradient at most once.

    ``pm.sample`` asks the model for them through ``Model.logp_dlogp_function``; the
    model's method is shadowed, for the duration of the context, by one that returns the
    function compiled for the same options earlier. Sampling the same model from several
    threads at once is serialised.
    """
    with _LOCK:
        compile_ = pymc_model.logp_dlogp_function
        cache = _COMPILED.setdefault(pymc_model, {})

        def logp_dlogp_function(*args, **kwargs):
            key = (args, tuple(sorted(kwargs.items())), _shape(pymc_model))
            try:
                hash(key)
            except TypeError:  # options that are not hashable: no reuse
                return compile_(*args, **kwargs)
            if key not in cache:
                cache[key] = compile_(*args, **kwargs)
            return cache[key]

        pymc_model.logp_dlogp_function = logp_dlogp_function
        try:
            yield
        finally:
            del pymc_model.logp_dlogp_function


def _shape(pymc_model) -> tuple:
    """Return what the compiled function depends on besides the graph: names and data shapes."""
    data = tuple(tuple(v.get_value(borrow=True).shape) for v in pymc_model.data_vars)
    return tuple(pymc_model.named_vars), data
