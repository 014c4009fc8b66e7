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


def test_companion_the_check_sees_an_import_of_torch_through_dp_neural():
    # one interpreter start for two checks: dp.neural is reachable as an attribute, and
    # the torch check of the test above fails once torch is imported
    proc = _run(
        "import sys, dpinfer as dp\n"
        "print(dp.neural.sppe.__name__)\n"
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    assert proc.stdout.strip() == "sppe", proc.stderr
    assert proc.returncode != 0 and "torch imported" in proc.stderr


BLOCK_TORCH = """
import importlib.abc, sys

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "zuko"):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None

sys.meta_path.insert(0, Block())
"""


def test_neural_without_torch_names_the_extra():
    proc = _run(BLOCK_TORCH + "import dpinfer\nimport dpinfer.neural")
    assert proc.returncode != 0
    assert "pip install 'dpinfer[neural]'" in proc.stderr
