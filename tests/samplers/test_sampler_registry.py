"""The sampler registry holds every public sampler, and its records claim what is true.

A public sampler is a public function of ``dpinfer``, ``dpinfer.samplers`` or
``dpinfer.neural`` that takes ``rng`` (directly, or through ``**public`` as the ABCDP
variants do) and is not one of the registry's ``NOT_SAMPLERS``. The companions plant a
registry with a record removed and a record claiming too little, and the checks must
fail on them.
"""

from __future__ import annotations

import importlib
import inspect

import pytest

from ._sampler_registry import NOT_SAMPLERS, PROPERTIES, PUBLIC_MODULES, SAMPLERS, Sampler


def _takes(function, name: str) -> bool:
    """Whether ``function`` takes keyword ``name``, itself or through ``**kwargs``."""
    parameters = inspect.signature(function).parameters.values()
    return any(p.name == name or p.kind is p.VAR_KEYWORD for p in parameters)


def _importable(module_name: str) -> bool:
    try:
        importlib.import_module(module_name)
    except ImportError:  # dpinfer.neural without its extra
        return False
    return True


def public_samplers() -> set[str]:
    """Names of the public functions taking ``rng`` that are not in ``NOT_SAMPLERS``."""
    names = set()
    for module_name in filter(_importable, PUBLIC_MODULES):
        module = importlib.import_module(module_name)
        for name in module.__all__:
            function = getattr(module, name)
            if inspect.isfunction(function) and _takes(function, "rng"):
                names.add(name)
    return names - set(NOT_SAMPLERS)


def missing_records(registry: list[Sampler]) -> set[str]:
    return public_samplers() - {case.name for case in registry}


def false_opt_outs(case: Sampler) -> list[str]:
    """The properties ``case`` opts out of that its sampler's own parameters say it has."""
    parameters = inspect.signature(case.function).parameters
    return [] if case.supports("executors") or "executor" not in parameters else ["executors"]


def test_every_public_sampler_has_a_record():
    assert not missing_records(SAMPLERS), "add a Sampler to tests/samplers/_sampler_registry.py"


def test_companion_a_registry_without_one_sampler_fails_the_check():
    for removed in ("da_mcmc", "soft_abcdp"):
        planted = [case for case in SAMPLERS if case.name != removed]
        assert missing_records(planted) == {removed}


def test_the_public_samplers_include_every_family():
    # the scan itself finds the samplers: through **public (the ABCDP variants) and in
    # dpinfer.neural, not only the direct ones
    names = public_samplers()
    assert {"rejection_abc", "mcem", "da_mcmc", "sample_reference", "soft_abcdp"} <= names
    assert {"estimate_acceptance_rate", "sbc", "check_privacy_rng"}.isdisjoint(names)


def test_every_record_names_a_public_sampler_once():
    names = [case.name for case in SAMPLERS]
    assert len(names) == len(set(names))
    for case in SAMPLERS:
        assert case.name in public_samplers() or not _importable(case.module), case.name


@pytest.mark.parametrize("case", SAMPLERS, ids=str)
def test_every_opt_out_names_a_known_property_and_a_reason(case):
    assert set(case.without) <= set(PROPERTIES)
    assert all(reason.strip() for reason in case.without.values())
    assert (case.sbc is None) == ("sbc" in case.without)
    if not case.supports("executors"):
        assert not case.supports("process_executors")


@pytest.mark.parametrize("case", SAMPLERS, ids=str)
def test_no_record_opts_out_of_what_its_signature_offers(case):
    assert not false_opt_outs(case)


def test_companion_a_record_opting_out_of_its_executor_fails_the_check():
    rejection = next(case for case in SAMPLERS if case.name == "rejection_abc")
    planted = Sampler(**{**vars(rejection), "without": {"executors": "planted"}})
    assert false_opt_outs(planted) == ["executors"]
