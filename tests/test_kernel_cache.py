"""``import dpinfer`` works where no cache folder is writable, with one warning.

numba's ``cache=True`` needs a writable folder: the package's ``__pycache__`` or
numba's user cache folder (``NUMBA_CACHE_DIR`` when set). The test copies the
package's sources to a temporary folder in which every ``__pycache__`` is a *file*
(so no cache folder can be made there, even for root), points ``HOME`` and
``XDG_CACHE_HOME`` below a file, unsets ``NUMBA_CACHE_DIR``, and imports in a fresh
interpreter every module that holds a ``cache=True`` function (found by reading the
sources, so a new kernel module is covered without a change here). Before the fallback
the import failed with numba's "cannot cache function '_bitlen': no locator available".
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import dpinfer
import dpinfer.models

PACKAGE = Path(dpinfer.__file__).parent
MODELS = Path(dpinfer.models.__file__).parent

CHILD = textwrap.dedent(
    """
    import importlib, json, sys, warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import dpinfer
        from dpinfer._numba_cache import KernelCacheWarning
        modules = {name: importlib.import_module(name) for name in sys.argv[1:]}
        # one kernel compiled and run without the cache: the exact discrete Laplace sampler
        draws = dpinfer.DiscreteLaplace(2.0).release([3, 4], rng=1).tolist()
    from numba.core.dispatcher import Dispatcher
    caches = {
        name: sorted(
            type(obj._cache).__name__
            for obj in vars(module).values()
            if isinstance(obj, Dispatcher) and obj.py_func.__module__ == name
        )
        for name, module in modules.items()
    }
    print(json.dumps({
        "file": dpinfer.__file__,
        "warnings": [str(w.message) for w in caught if w.category is KernelCacheWarning],
        "caches": caches,
        "draws": draws,
    }))
    """
)


def _kernel_modules() -> dict[str, int]:
    """Module name -> number of ``cache=True`` functions, over dpinfer and dpinfer.models.

    Options given as a module-level dict (``_JIT = {"cache": True, ...}``,
    ``@nb.njit(**_JIT)``) count as well.
    """
    found = {}
    for root, prefix in ((PACKAGE, "dpinfer"), (MODELS, "dpinfer.models")):
        for path in sorted(root.rglob("*.py")):
            text = path.read_text()
            count = len(re.findall(r"@\w+\.njit\((?:[^)]*, )?cache=True\b", text))
            for options in re.findall(r'^(\w+) = \{[^}]*"cache": True\b', text, re.MULTILINE):
                count += len(re.findall(rf"@\w+\.njit\(\*\*{options}\)", text))
            if count and not (root == PACKAGE and MODELS in path.parents):
                parts = path.relative_to(root).with_suffix("").parts
                found[".".join((prefix, *parts)).removesuffix(".__init__")] = count
    return found


def _unwritable_copy(tmp_path: Path) -> Path:
    """Copy the sources; make every ``__pycache__`` a file, so no cache folder can be made."""
    site = tmp_path / "site"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(PACKAGE, site / "dpinfer", ignore=ignore)
    if not (site / "dpinfer" / "models").exists():  # models/ is mapped to dpinfer.models
        shutil.copytree(MODELS, site / "dpinfer" / "models", ignore=ignore)
    for folder in [site, *(p for p in site.rglob("*") if p.is_dir())]:
        (folder / "__pycache__").write_text("not a folder\n")
    return site


@pytest.fixture(scope="module")
def child(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("kernel_cache")
    site = _unwritable_copy(tmp)
    blocker = tmp / "home-is-a-file"
    blocker.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CACHE")}
    env |= {
        "PYTHONPATH": str(site),
        "HOME": str(blocker / "home"),
        "XDG_CACHE_HOME": str(blocker / "cache"),
        "PYTHONDONTWRITEBYTECODE": "1",
        # PyTensor (imported by the modules that register compiled Ops) needs its own
        # compile folder whatever dpinfer does; numba's cache is what this test takes away
        "PYTENSOR_FLAGS": f"base_compiledir={tmp / 'pytensor'}",
    }
    modules = _kernel_modules()
    result = subprocess.run(
        [sys.executable, "-c", CHILD, *modules],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1]), modules, site


def test_import_without_a_writable_cache_folder_warns_once(child):
    out, _, site = child
    assert out["file"].startswith(str(site))  # the copy, not the installed package
    assert len(out["warnings"]) == 1 and "NUMBA_CACHE_DIR" in out["warnings"][0]
    assert len(out["draws"]) == 2  # a kernel compiled in memory and ran


def test_every_cache_true_kernel_is_compiled_without_the_cache(child):
    out, modules, _ = child
    assert set(out["caches"]) == set(modules)
    for name, count in modules.items():
        caches = out["caches"][name]
        assert len(caches) >= count, name  # each cache=True function is a dispatcher here
        assert set(caches) == {"NullCache"}, name


def test_the_kernel_modules_are_found():
    # the companion of the walk above: it finds the known kernel modules
    modules = _kernel_modules()
    assert {
        "dpinfer.mechanisms._exact_compiled",
        "dpinfer.marginal._kernels",
        "dpinfer.samplers.da._da_kernels",
        "dpinfer.models.sir._compiled",
    } <= set(modules)
    assert sum(modules.values()) >= 70
