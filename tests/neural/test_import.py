"""``import dpinfer`` stays torch-free; ``dpinfer.neural`` names the extra without torch."""

from __future__ import annotations

import subprocess
import sys


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


def test_import_dpinfer_does_not_import_torch():
    proc = _run(
        "import sys, dpinfer, dpinfer.models.sir\n"
        "assert 'torch' not in sys.modules and 'zuko' not in sys.modules, 'torch imported'\n"
        "print('ok')"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_companion_the_check_sees_an_import_of_torch():
    proc = _run("import sys, dpinfer.neural\nassert 'torch' not in sys.modules, 'torch imported'")
    assert proc.returncode != 0 and "torch imported" in proc.stderr


def test_neural_without_torch_names_the_extra():
    # torch made unimportable: sys.modules[name] = None makes "import name" fail
    proc = _run("import sys\nsys.modules['torch'] = None\nimport dpinfer.neural")
    assert proc.returncode != 0
    assert "pip install 'dpinfer[neural]'" in proc.stderr


def test_dp_neural_is_reachable_as_an_attribute():
    proc = _run("import dpinfer as dp\nprint(dp.neural.sppe.__name__)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "sppe"
