"""The examples' docstring examples, run under the modules' installed names.

``models/`` is installed as ``dpinfer.models``; collecting it by path
(``--doctest-modules models``) would import each module a second time as
``models.*``, and numba's on-disk cache, keyed by source file, would then
record a module name that other processes cannot import.
"""

import doctest
import importlib
import importlib.util
import pkgutil

import pytest

import dpinfer.models

MODULES = sorted(
    info.name for info in pkgutil.walk_packages(dpinfer.models.__path__, prefix="dpinfer.models.")
)


def test_every_example_module_is_listed():
    names = set(MODULES)
    assert {"dpinfer.models.poisson_count", "dpinfer.models.tuberculosis"} <= names
    assert len(names) >= 10


@pytest.mark.parametrize("name", [m for m in MODULES if not m.rsplit(".", 1)[-1].startswith("_")])
def test_each_public_example_module_has_examples(name):
    finder = doctest.DocTestFinder()
    assert sum(len(t.examples) for t in finder.find(importlib.import_module(name))) > 0


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, report=True, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"


def test_a_wrong_example_fails(tmp_path):
    # planted: a docstring whose printed value is wrong must be reported as failed
    source = 'def f():\n    """\n    >>> 1 + 1\n    3\n    """\n'
    path = tmp_path / "planted_doc.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("planted_doc", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    runner = doctest.DocTestRunner(verbose=False)
    for test in doctest.DocTestFinder().find(module):
        runner.run(test, out=lambda _: None)
    assert runner.failures == 1
