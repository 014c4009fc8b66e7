"""Module paths from before the samplers were grouped by family keep working, with a warning.

``dpinfer.samplers.mcem``, ``.smc`` and ``.abcdp`` are now packages under the same names;
``da_mcmc``, ``smc_tolerance`` and ``abcdp_variants`` are thin modules that re-export the
public names and warn (DeprecationWarning) when imported, naming the line that imports them.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

import dpinfer as dp
import dpinfer.samplers as samplers

MOVED = {
    "dpinfer.samplers.da_mcmc": ["da_mcmc"],
    "dpinfer.samplers.smc_tolerance": ["tolerance_smc_abc"],
    "dpinfer.samplers.abcdp_variants": ["rejection_abcdp_gaussian", "soft_abcdp"],
}
KEPT = ["dpinfer.samplers.mcem", "dpinfer.samplers.smc", "dpinfer.samplers.abcdp"]


@pytest.fixture
def fresh():
    """Forget the moved modules (imported once, they would not warn again); restore after."""
    names = {name: name.rpartition(".")[2] for name in MOVED}
    saved_modules = {name: sys.modules.pop(name, None) for name in names}
    namespace = vars(samplers)  # read directly: getattr would import the moved modules
    saved_attributes = {short: namespace.pop(short, None) for short in names.values()}
    saved_attributes["da_mcmc"] = dp.da_mcmc
    namespace["da_mcmc"] = dp.da_mcmc
    yield
    for name, module in saved_modules.items():
        sys.modules.pop(name, None)
        if module is not None:
            sys.modules[name] = module
    for short, value in saved_attributes.items():
        namespace.pop(short, None)
        if value is not None:
            namespace[short] = value


@pytest.mark.parametrize("name", MOVED)
def test_an_old_path_warns_at_the_importing_line_and_reexports(fresh, name):
    with pytest.warns(DeprecationWarning, match="import .* from dpinfer.samplers") as caught:
        module = importlib.import_module(name)
    assert caught[0].filename == __file__  # the importing line, not the import machinery
    assert sorted(module.__all__) == sorted(MOVED[name])
    for public in MOVED[name]:
        assert public in caught[0].message.args[0]
        assert getattr(module, public) is getattr(dp, public)


@pytest.mark.parametrize("name", ["smc_tolerance", "abcdp_variants"])
def test_an_old_module_reached_as_an_attribute_warns_once(fresh, name):
    with pytest.warns(DeprecationWarning, match=name) as caught:
        module = getattr(samplers, name)
    assert module is sys.modules[f"dpinfer.samplers.{name}"]
    assert caught[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert getattr(samplers, name) is module


def test_the_sampler_stays_callable_after_its_old_module_is_imported(fresh, monkeypatch):
    with pytest.warns(DeprecationWarning):
        module = importlib.import_module("dpinfer.samplers.da_mcmc")
    # the import made the module the package's attribute, where the function was
    assert samplers.da_mcmc is module and dp.da_mcmc is module.da_mcmc
    monkeypatch.setattr(module, "da_mcmc", lambda *args, **kwargs: (args, kwargs))
    assert samplers.da_mcmc(1, rng=2) == ((1,), {"rng": 2})


@pytest.mark.parametrize("name", KEPT)
def test_a_family_package_keeps_its_old_module_path_without_warning(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        module = importlib.import_module(name)
    assert module.__file__.endswith("__init__.py")
    for public in module.__all__:
        assert getattr(module, public) is getattr(dp, public, getattr(module, public))


def test_importing_dpinfer_imports_no_deprecated_module():
    code = f"import sys, dpinfer; print(sorted(set(sys.modules) & {set(MOVED)!r}))"
    out = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-c", code],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "[]"
