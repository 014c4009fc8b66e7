"""The built wheel installs and imports on its own (``dpinfer`` and ``dpinfer.models``).

The wheel is built from a copy of the working tree (so the build leaves no
``build/`` behind in the repository), installed with ``--no-deps`` into a fresh
venv, and imported from a temporary working directory with ``PYTHONPATH`` unset.
The dependencies come from the project's venv through a ``.pth`` line that
*appends* its site-packages to ``sys.path``: appended after the new venv's own
site-packages, and without processing the project venv's ``.pth`` files (so its
editable-install finder never loads), the wheel's copy of ``dpinfer`` must win.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def _run(cmd, *, with_stderr=False, **kwargs):
    proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if proc.returncode != 0:
        pytest.fail(
            f"{' '.join(map(str, cmd))} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    return proc.stdout + proc.stderr if with_stderr else proc.stdout


def _clean_env():
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.pop("VIRTUAL_ENV", None)
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> tuple[Path, str]:
    src = tmp_path_factory.mktemp("src")
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    for name in ("dpinfer", "models"):
        shutil.copytree(ROOT / name, src / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md", "LICENSE", "LICENSE.txt"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, src / name)
    dist = tmp_path_factory.mktemp("dist")
    log = _run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(src)],
        cwd=src,
        with_stderr=True,
    )
    (built,) = dist.glob("dpinfer-*.whl")
    return built, log


def test_the_build_is_quiet(wheel):
    # every folder that ships files is declared as a package: no setuptools warning about
    # data folders "absent from the packages configuration"
    _, log = wheel
    assert "absent from the `packages` configuration" not in log
    assert "Warning" not in log, log[-3000:]


def test_wheel_holds_every_module_under_dpinfer(wheel):
    names = set(zipfile.ZipFile(wheel[0]).namelist())
    expected = {
        f"dpinfer/{p.relative_to(ROOT / 'dpinfer').as_posix()}"
        for p in (ROOT / "dpinfer").rglob("*.py")
        if "__pycache__" not in p.parts
    }
    expected |= {
        f"dpinfer/models/{p.relative_to(ROOT / 'models').as_posix()}"
        for p in (ROOT / "models").rglob("*.py")
        if "__pycache__" not in p.parts
    }
    expected |= {
        f"dpinfer/models/{p.relative_to(ROOT / 'models').as_posix()}"
        for p in (ROOT / "models").glob("data/*.csv")
    }
    expected.add("dpinfer/py.typed")
    assert sorted(expected - names) == []
    # models ship inside the dpinfer namespace, never as a generic top-level package
    assert not any(n.startswith("models/") for n in names)


def test_wheel_installs_and_imports_without_the_source_tree(wheel, tmp_path):
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    py = venv / "bin" / "python"
    _run(
        [sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index"]
        + ["--quiet", str(wheel[0])],
        env=_clean_env(),
    )
    new_site = _run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]
    ).strip()
    deps_site = sysconfig.get_paths()["purelib"]  # the project venv: numpy, scipy, pymc, ...
    (Path(new_site) / "_project_deps.pth").write_text(
        f"import sys; sys.path.append({deps_site!r})\n", encoding="utf-8"
    )

    code = """
import json, sys
import dpinfer, dpinfer.models, dpinfer.mechanisms
import importlib.metadata as md
mech = dpinfer.Laplace.from_privacy(epsilon=1.0, sensitivity=1.0)
out = mech.release([1.0, 2.0], rng=0)
print(json.dumps({
    "dpinfer": dpinfer.__file__,
    "models": dpinfer.models.__file__,
    "mechanisms": dpinfer.mechanisms.__file__,
    "version": dpinfer.__version__,
    "dist_version": md.version("dpinfer"),
    "release_shape": list(out.shape),
    "finders": [type(f).__name__ for f in sys.meta_path],
    "path": sys.path,
}))
"""
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    info = json.loads(_run([str(py), "-c", code], cwd=cwd, env=_clean_env()))

    for key in ("dpinfer", "models", "mechanisms"):
        where = Path(info[key]).resolve()
        assert where.is_relative_to(Path(new_site).resolve()), (key, where)
        assert not where.is_relative_to(ROOT), (key, where)
    assert Path(info["models"]).parent.name == "models"
    assert (Path(info["dpinfer"]).parent / "py.typed").exists()
    assert info["version"] == info["dist_version"]
    assert info["release_shape"] == [2]
    assert not any("Editable" in name for name in info["finders"])
    assert str(ROOT) not in info["path"]
    # the dependency path was appended after the wheel's own site-packages
    assert info["path"].index(deps_site) > info["path"].index(new_site)
