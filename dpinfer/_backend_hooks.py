"""Register dpinfer's PyTensor Ops with a PyTensor backend when that backend is imported.

PyTensor converts an Op for its JAX or numba backend through a dispatcher
(``jax_funcify`` in ``pytensor.link.jax.dispatch``, ``numba_funcify`` in
``pytensor.link.numba.dispatch``) that must know the Op before it converts a graph.
Importing a dispatcher is costly (the JAX one imports JAX, which starts threads: a
process that forks afterwards, as dpinfer's process pools and ``dp.sbc`` do, gets
JAX's warning that a fork after threads may deadlock). So dpinfer registers its
implementations only once the dispatcher is imported, by whoever imports it (PyTensor's
linker when a function is compiled with ``mode="JAX"`` or ``"NUMBA"``, PyMC's JAX
samplers, nutpie):

``register_on_import(dispatch, registrar)`` imports the module ``registrar`` at once
if the module ``dispatch`` is already imported; otherwise it installs a finder on
:data:`sys.meta_path` that wraps ``dispatch``'s loader, so that ``registrar`` is
imported right after ``dispatch`` has been executed. The finder removes itself then
(and does nothing for any other module), so it fires at most once per process.
"""

from __future__ import annotations

import importlib
import importlib.abc
import sys
import threading

__all__ = ["register_on_import"]

_lock = threading.Lock()


def register_on_import(dispatch: str, registrar: str) -> None:
    """Import the module ``registrar`` as soon as the module ``dispatch`` is imported.

    Parameters
    ----------
    dispatch : str
        The full name of the module whose import triggers the registration, such as
        ``"pytensor.link.jax.dispatch"``.
    registrar : str
        The full name of the module that registers the implementations when imported.
    """
    with _lock:
        if dispatch not in sys.modules:
            finder = _finder(dispatch)
            if finder is None:
                sys.meta_path.insert(0, _AfterImport(dispatch, registrar))
            else:
                finder.registrars.add(registrar)
            return
    importlib.import_module(registrar)


def _finder(dispatch: str) -> _AfterImport | None:
    """Return the finder already waiting for ``dispatch``, if any."""
    for finder in sys.meta_path:
        if isinstance(finder, _AfterImport) and finder.dispatch == dispatch:
            return finder
    return None


class _AfterImport(importlib.abc.MetaPathFinder):
    """A finder that wraps the loader of ``dispatch`` to import ``registrars`` after it."""

    def __init__(self, dispatch: str, registrar: str):
        self.dispatch, self.registrars = dispatch, {registrar}

    def find_spec(self, fullname, path, target=None):
        if fullname != self.dispatch:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _RegisteringLoader(spec.loader, self)
                return spec
        return None

    def fire(self) -> None:
        """Leave :data:`sys.meta_path` and import the registrars."""
        with _lock:
            if self in sys.meta_path:
                sys.meta_path.remove(self)
        for registrar in sorted(self.registrars):
            importlib.import_module(registrar)


class _RegisteringLoader(importlib.abc.Loader):
    """``loader``, which calls ``finder.fire()`` once it has executed the module."""

    def __init__(self, loader, finder: _AfterImport):
        self.loader, self.finder = loader, finder

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        self.finder.fire()

    def __getattr__(self, name):
        # the wrapped loader's other methods (get_source, is_package, ...)
        return getattr(self.loader, name)
