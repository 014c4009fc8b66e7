"""Registration of the Ops' backend implementations when PyTensor imports a backend.

A to_pymc model must not import JAX (whose threads make a later fork warn) nor PyTensor's
numba dispatch; each registers when its dispatch module is imported, before or after the
model is built. The whole-process checks run in a fresh interpreter, each in a process forked
from it once it has imported PyMC and dpinfer.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap

import pytest

from dpinfer._backend_hooks import _AfterImport, register_on_import


@pytest.fixture
def modules(tmp_path, monkeypatch):
    """A throwaway ``dispatch`` module and a ``registrar`` that records its import."""
    (tmp_path / "hook_dispatch.py").write_text("VALUE = 1\n")
    (tmp_path / "hook_registrar.py").write_text(
        "import hook_dispatch\nhook_dispatch.REGISTERED = hook_dispatch.VALUE\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "hook_dispatch", "hook_registrar"
    for name in ("hook_dispatch", "hook_registrar"):
        sys.modules.pop(name, None)
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _AfterImport)]


def _waiting(dispatch):
    return [f for f in sys.meta_path if isinstance(f, _AfterImport) and f.dispatch == dispatch]


def test_the_registrar_is_imported_right_after_the_dispatch_module(modules):
    dispatch, registrar = modules
    register_on_import(dispatch, registrar)
    register_on_import(dispatch, registrar)  # idempotent: one finder
    assert registrar not in sys.modules and len(_waiting(dispatch)) == 1
    module = importlib.import_module(dispatch)
    assert module.REGISTERED == 1 and registrar in sys.modules
    assert _waiting(dispatch) == []  # removed once fired


def test_an_imported_dispatch_module_registers_at_once(modules):
    dispatch, registrar = modules
    importlib.import_module(dispatch)
    register_on_import(dispatch, registrar)
    assert sys.modules[dispatch].REGISTERED == 1 and _waiting(dispatch) == []


def test_other_imports_pass_through_the_finder(modules):
    dispatch, registrar = modules
    register_on_import(dispatch, registrar)
    assert _waiting(dispatch)[0].find_spec("json", None) is None
    assert registrar not in sys.modules


def _run(code: str) -> str:
    """Run ``code`` in a fresh interpreter; return its standard output."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


#: Runs each of ``SCENARIOS`` in a process forked from one that imported PyMC and dpinfer
#: (but neither JAX nor a backend's dispatch): each starts from a fresh interpreter's state
#: without paying for those imports again. Each prints its name, then its own lines.
FORKED = """
    import os
    import traceback

    for name, code in SCENARIOS.items():
        print("scenario", name, flush=True)
        pid = os.fork()
        if pid == 0:
            try:
                exec(code, dict(globals()))
            except BaseException:
                traceback.print_exc()
                os._exit(1)
            sys.stdout.flush()
            os._exit(0)
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0, name
"""


MODEL = """
    import sys
    import numpy as np
    import pymc as pm
    import dpinfer as dp

    def build():
        with pm.Model() as model:
            mu = pm.Normal("mu", 1.0, 0.5)
            mech = dp.DiscreteGaussian(2.0)
            mech.to_pymc("y", pm.Poisson.dist(mu=pm.math.exp(mu), shape=3),
                         observed=np.array([2, 5, 3]))
            dp.Thresholded(dp.DiscreteGaussian(2.0, event_shape=(2,)), threshold=4).to_pymc(
                "s", pm.Normal("x", 5.0, 2.0, shape=2), observed=np.array([np.nan, 6.0]))
        return model
"""


JAXIFY = """
    from pymc.sampling.jax import get_jaxified_logp
    import jax

    point = model.initial_point()
    logp = jax.jit(jax.value_and_grad(get_jaxified_logp(model)))
    value, grad = logp([point[v.name] for v in model.value_vars])
    expected = model.compile_logp()(point)
    print("jax logp", bool(abs(value - expected) < 1e-8 * abs(expected)),
          all(np.isfinite(g).all() for g in grad))
"""

REGISTERED = """
    import pytensor.link.jax.dispatch as jd
    import pytensor.link.numba.dispatch.basic as nd
    from dpinfer.marginal._op import MarginalLogp
    from dpinfer.mechanisms._pytensor_ops import DiscreteGaussianLogCDF
    print("jax", all(c in jd.jax_funcify.registry for c in (MarginalLogp, DiscreteGaussianLogCDF)))
    print("numba", MarginalLogp in nd.numba_funcify.registry)
    print("hooks", [type(f).__name__ for f in sys.meta_path if type(f).__name__ == "_AfterImport"])
"""


BUILD_AND_EVALUATE = """
model = build()
model.compile_logp()(model.initial_point())
loaded = [m for m in ("jax", "pytensor.link.jax.dispatch", "pytensor.link.numba.dispatch",
                      "dpinfer.marginal._numba_op") if m in sys.modules]
print("loaded", loaded)
"""

IMPORT_THEN_BUILD = """
import pymc.sampling.jax
model = build()
"""


@pytest.fixture(scope="module")
def scenarios():
    """Each scenario's standard output: a model compiled by JAX, built before or after.

    The JAX samplers (numpyro, blackjax) compile the model's log-density and gradient
    as here (``pymc.sampling.jax.get_jaxified_logp``); sampling with them is checked in
    ``tests/marginal/test_jax_samplers.py``.
    """
    pytest.importorskip("jax")
    jaxify, registered = (textwrap.dedent(code) for code in (JAXIFY, REGISTERED))
    codes = {
        "build first": BUILD_AND_EVALUATE + jaxify + registered,
        "import first": IMPORT_THEN_BUILD + jaxify + registered,
    }
    out = _run(MODEL + f"\n    SCENARIOS = {codes!r}\n" + FORKED)
    _, *parts = out.split("scenario ")
    return dict(part.split("\n", 1) for part in parts)


def test_a_model_imports_no_backend_until_jax_compiles_it(scenarios):
    out = scenarios["build first"]
    assert "loaded []" in out and "jax logp True True" in out, out
    assert "jax True" in out and "numba True" in out and "hooks []" in out, out


def test_jax_compiles_a_model_built_after_the_jax_dispatch_was_imported(scenarios):
    out = scenarios["import first"]
    assert "jax logp True True" in out and "jax True" in out and "hooks []" in out, out
