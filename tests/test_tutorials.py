"""Every tutorial notebook runs top to bottom (in fast mode) and is committed with its outputs.

The notebooks are executed with nbclient in a kernel running this interpreter, with
``DPINFER_FAST=1`` in its environment, and are never written back: the committed outputs come
from a full-mode run.

The notebooks of one test class share a kernel, so that each does not pay for starting one and
importing PyMC, PyTensor, SciPy and dpinfer again (3 to 5 CPU seconds a notebook). Before each
notebook the kernel forgets every name (``%reset -f``), closes its figures and returns to the
tutorials folder, so a notebook that uses a name it does not define fails as it would alone
(``test_a_shared_kernel_forgets_the_names_of_the_previous_notebook``). Settings a notebook
changes in imported modules (warning filters, logging levels, matplotlib's rcParams) stay;
they change what a later notebook prints, not whether its cells raise.
"""

import contextlib
import gc
import json
import os
import sys
from pathlib import Path

import nbclient
import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
from nbclient.exceptions import CellExecutionError

TUTORIALS = Path(__file__).resolve().parent.parent / "tutorials"
NOTEBOOKS = sorted(TUTORIALS.glob("*.ipynb"))
MAX_BYTES = 300_000


def _python3_is_this_interpreter() -> bool:
    """Whether the ``python3`` kernelspec now visible would start ``sys.executable``."""
    try:
        spec = KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:
        return False
    exe = spec.argv[0]
    # jupyter_client replaces these bare names by sys.executable when it launches the kernel
    bare = {"python", f"python{sys.version_info[0]}", "python{}.{}".format(*sys.version_info[:2])}
    return exe in bare or os.path.abspath(exe) == os.path.abspath(sys.executable)


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    """Make ``python3`` start this interpreter with ``DPINFER_FAST=1``.

    A user or system kernelspec may point at another Python; then a kernelspec for this
    interpreter is written to a temporary directory put first on ``JUPYTER_PATH``.
    """
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DPINFER_FAST", "1")
        if not _python3_is_this_interpreter():
            root = tmp_path_factory.mktemp("jupyter")
            spec_dir = root / "kernels" / "python3"
            spec_dir.mkdir(parents=True)
            spec = {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "Python 3 (dpinfer tests)",
                "language": "python",
            }
            (spec_dir / "kernel.json").write_text(json.dumps(spec))
            paths = [str(root), *filter(None, [os.environ.get("JUPYTER_PATH")])]
            mp.setenv("JUPYTER_PATH", os.pathsep.join(paths))
            assert _python3_is_this_interpreter()
        yield


def _client(nb: nbformat.NotebookNode, km=None) -> nbclient.NotebookClient:
    # a kernel is stopped only once its notebooks have run (or failed): a graceful
    # shutdown would wait 1-3 s for it to finalise its interpreter, for nothing
    return nbclient.NotebookClient(
        nb,
        km=km,
        timeout=600,
        kernel_name="python3",
        shutdown_kernel="immediate",
        resources={"metadata": {"path": str(TUTORIALS)}},
    )


def _execute(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Execute ``nb`` in place in a new kernel in the tutorials folder; raise if a cell fails."""
    return _client(nb).execute()


#: Run in a shared kernel before each notebook: a clean namespace in the tutorials folder,
#: and the garbage collector's thresholds of the test run (see ``conftest.py``).
RESET = f"""%reset -f
import gc as _gc
import os as _os
import matplotlib.pyplot as _plt

_plt.close("all")
_os.chdir({str(TUTORIALS)!r})
_gc.set_threshold(*{gc.get_threshold()!r})
del _gc, _os, _plt
"""


class _SharedKernel:
    """A kernel kept for several notebooks (started in the tutorials folder).

    A notebook that fails may leave its kernel busy or broken: the kernel is then shut down,
    and the next notebook starts a new one.
    """

    def __init__(self):
        self._stack = contextlib.ExitStack()
        self._km = None

    def execute(self, nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
        """Execute ``nb`` in place after :data:`RESET`; raise if a cell fails."""
        if self._km is None:
            owner = _client(nbformat.v4.new_notebook())
            self._stack.enter_context(owner.setup_kernel())
            self._km = owner.km
        reset = nbformat.v4.new_notebook()
        reset.cells = [nbformat.v4.new_code_cell(RESET)]
        try:
            for book in (reset, nb):
                client = _client(book, self._km)
                try:
                    client.execute()
                finally:
                    if client.kc is not None:
                        client.kc.stop_channels()
        except BaseException:
            self.close()
            raise
        return nb

    def close(self) -> None:
        self._km = None
        self._stack.close()


@pytest.fixture(scope="class")
def shared_kernel(kernel):
    """One :class:`_SharedKernel` for the notebooks of a test class."""
    shared = _SharedKernel()
    yield shared
    shared.close()


def _stdout(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


def test_kernel_runs_this_interpreter_in_fast_mode(kernel):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import os, sys\nprint(sys.executable)\nprint(os.environ.get('DPINFER_FAST'))"
        )
    ]
    exe, fast = _stdout(_execute(nb).cells[0]).split()
    assert os.path.abspath(exe) == os.path.abspath(sys.executable)
    assert fast == "1"


def test_a_raising_cell_fails_the_run(kernel):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_code_cell("raise RuntimeError('planted failure')"),
        nbformat.v4.new_code_cell("x = 2"),
    ]
    with pytest.raises(CellExecutionError, match="planted failure"):
        _execute(nb)


def test_a_shared_kernel_forgets_the_names_of_the_previous_notebook(shared_kernel, tmp_path):
    first, second = nbformat.v4.new_notebook(), nbformat.v4.new_notebook()
    first.cells = [
        nbformat.v4.new_code_cell(f"import os\nleaked = 1\nos.chdir({str(tmp_path)!r})")
    ]
    second.cells = [nbformat.v4.new_code_cell("import os\nprint(os.getcwd())")]
    shared_kernel.execute(first)
    assert _stdout(shared_kernel.execute(second).cells[0]).strip() == str(TUTORIALS)
    # planted: the second notebook reads a name only the first one defined
    second.cells.append(nbformat.v4.new_code_cell("print(leaked)"))
    with pytest.raises(CellExecutionError, match="NameError"):
        shared_kernel.execute(second)
    # a new kernel replaces the one that failed and runs the next notebook
    assert _stdout(shared_kernel.execute(first).cells[0]) == ""


def _runs_share(share: int, shares: int) -> type:
    """A test class running every ``shares``-th notebook, starting at ``share``.

    ``make test`` distributes tests over workers by module and class (pytest-xdist's
    ``loadscope``); one class per share lets the notebooks run on several workers at once.
    """
    paths = NOTEBOOKS[share::shares]

    @pytest.mark.parametrize("path", paths, ids=[p.name for p in paths])
    def test_notebook_runs(self, shared_kernel, path):
        nb = nbformat.read(path, as_version=4)
        before = path.read_bytes()
        shared_kernel.execute(nb)
        assert path.read_bytes() == before, "executing a tutorial must not write it back"

    return type(f"TestNotebooks{share}", (), {"test_notebook_runs": test_notebook_runs})


SHARES = 4
for _share in range(SHARES):
    globals()[f"TestNotebooks{_share}"] = _runs_share(_share, SHARES)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_committed_with_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    assert code, f"{path.name} has no code"
    counts = [c.execution_count for c in code]
    assert all(isinstance(n, int) for n in counts), (
        f"{path.name}: cells without an execution count (not executed before committing): "
        f"{[i for i, n in enumerate(counts) if not isinstance(n, int)]}"
    )
    assert counts == list(range(1, len(code) + 1)), (
        f"{path.name} was not executed top to bottom in one kernel: execution counts {counts}"
    )
    assert any(c.outputs for c in code), f"{path.name} has no outputs"
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, f"{path.name} is committed with an error output"
    assert path.stat().st_size < MAX_BYTES, (
        f"{path.name} is {path.stat().st_size} bytes; lower the figure resolution"
    )


def test_tutorials_are_found():
    assert any(p.name == "01_mechanisms.ipynb" for p in NOTEBOOKS)
