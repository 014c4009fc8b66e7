"""PyTensor's numba backend for the marginal Op: what nutpie and ``mode="NUMBA"`` compile.

Without these implementations PyTensor runs :class:`._op.MarginalLogp` in object mode
(with a warning): each evaluation takes the GIL, so nutpie's parallel chains wait for
one another. The implementation here calls the sweeps of :mod:`._sweep` (and of
:mod:`._groups` for group totals) from compiled code, through their addresses
(:mod:`._native`): every graph runs the one copy that Python's calls compiled and
numba's cache keeps, instead of compiling each family's sums into its own code.
:func:`._pymc.register_backends` has this module imported when PyTensor's numba dispatch
is (:mod:`dpinfer._backend_hooks`): a model built for the default backend imports neither.

**Threads.** As the Python implementation does, a node spreads a table of
``._op.THREADED_CELLS`` cells or more over numba's threads (the calling thread's
``numba.get_num_threads()``) in the process that compiled it, and sums every
other table, and any table in a child process, on the calling thread
(:func:`._sweep.sweep_cells`). A node whose releases are a constant of fewer numbers
than that never calls the threaded sweep, which is then not compiled for it.

**The per-cell state.** The Op's ``state`` input (a shared variable) cannot be
updated in place here: nutpie hands one read-only copy of every shared variable to
all its chains, which run at once in threads, and two sweeps writing one state
would leave a cell's row with the constants of two modes, or give a batch of cells
another sweep's constants when it reads them from the state again (the planted bug
of ``tests/marginal/test_numba.py``'s thread tests). So each compiled node keeps its
own states, one per thread that evaluates it, in a small pool: a thread claims a slot
(an atomic compare-and-swap), preferring the one it used last, sweeps with that
slot's state and releases it. A thread that finds every slot taken sweeps with a
fresh state (correct, only slower). A state holds hints that never change the
result (:mod:`._poisson`), so which one a sweep gets changes its cost only.

**Failures.** A cell whose sum cannot be completed makes the compiled sweep raise
the Op's own error (``._op._refuse``) through an object-mode block entered only
then: the same exception and message as the Python implementation, also issued as
a RuntimeWarning, since nutpie drops the exceptions of the functions it calls.
"""

from __future__ import annotations

import ctypes
import math
import sys
import warnings
import weakref

import numba as nb
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array
from pytensor.graph.basic import Constant
from pytensor.link.numba.dispatch.basic import numba_funcify

from .._tensor_shapes import ShapeCheck, _message
from ..noise.form import CELL, Grouped
from ..noise.terms import log_terms
from . import _native, _op
from ._forms import HEADER, parameters, unpacked
from ._group_op import GroupTotalsLogp
from ._group_op import _refuse as _refuse_groups
from ._groups import OK, group_sweep
from ._kernels import BEYOND
from ._op import MarginalLogp, _refuse
from ._poisson import STATE
from ._quadrature import _held_fixed_op, _noise_terms_op
from ._sweep import marginal_sweep, sweep_cells

__all__: list[str] = []

# numba's cache of these functions is keyed on this file alone, and they call the sweeps with
# the argument layout of when they were compiled: after changing the types ._forms names or
# the sweeps' arguments, remove this folder's __pycache__ (a stale copy can crash the process).

#: Threads that keep a state of their own per compiled node; more sweep with a fresh one.
SLOTS = 16
# the words of a slot: taken (0 or 1), its last thread, its state's address and cells
_TAKEN, _THREAD, _ADDRESS, _CELLS = range(4)
_WORDS = 4

_RECORD = nb.from_dtype(CELL)
_WIDTH = CELL.itemsize // 8  # float64 fields (dpinfer.noise.form.as_matrix)
_LIBC = ctypes.CDLL(None)
_LIBC.free.argtypes, _LIBC.free.restype = [ctypes.c_size_t], None


@numba_funcify.register(type(_held_fixed_op()))
def _funcify_held_fixed(op, node=None, **kwargs):
    return _copy


@numba_funcify.register(type(_noise_terms_op()))
def _funcify_noise_terms(op, node=None, **kwargs):
    return _noise_terms


@numba_funcify.register(GroupTotalsLogp)
def _funcify_group_totals(op, node=None, **kwargs):
    """Return the compiled ``(a, b, form, table, starts, totals) -> (logp, score_a, score_b)``."""
    family, tol = op.family, op.tol
    code = group_sweep_address(family)

    @nb.njit(error_model="numpy")
    def group_totals_logp(a, b, form, table, starts, totals):
        return _group_totals_logp(family, tol, code, a, b, form, table, starts, totals)

    return group_totals_logp


@nb.njit(cache=True, error_model="numpy")
def _group_totals_logp(family, tol, code, a, b, form, table, starts, totals):
    """Return GroupTotalsLogp's outputs; a failed group raises its Python error.

    ``code`` is :func:`group_sweep_address` of ``family``.
    """
    cells, table = _unpacked(form, table)
    logp, status = np.empty(totals.size), np.empty(totals.size, dtype=np.int64)
    score_a, score_b = np.empty(a.size), np.empty(a.size)
    pa, pb = np.ascontiguousarray(a), np.ascontiguousarray(b)
    every = _frozen(np.ascontiguousarray(starts).astype(np.int64))
    exact = _frozen(np.ascontiguousarray(totals).astype(np.float64))
    outputs = (logp, score_a, score_b, status)
    _call_group_sweep(code, (family, pa, pb, cells, table, tol, every, exact, *outputs))
    if np.any(status != OK):
        _raise_group_refusal(status)
    return logp, score_a, score_b


@nb.njit(cache=True)
def _raise_group_refusal(status):
    """Raise the Python implementation's error for the groups that failed (object mode)."""
    with nb.objmode():
        _refuse_aloud(_refuse_groups, status)


def _refuse_aloud(refuse, *arguments) -> None:
    """Raise ``refuse(*arguments)``'s error, warning its message first.

    nutpie calls the compiled log-density where no Python exception reaches the user (a
    failed evaluation is a divergence to it): the warning says which cells failed and why.
    """
    try:
        refuse(*arguments)
    except FloatingPointError as error:
        warnings.warn(str(error), RuntimeWarning, stacklevel=2)
        raise


@numba_funcify.register(ShapeCheck)
def _funcify_shape_check(op, node=None, **kwargs):
    name, target, about, exact = op.name, np.array(op.target, dtype=np.int64), op.about, op.exact

    @nb.njit
    def shape_check(x, shape_of):
        if not _fits(shape_of, target, exact):
            _raise_shape_error(name, shape_of, target, about, exact)
        return x

    return shape_check


@nb.njit(cache=True)
def _fits(shape, target, exact):
    """:func:`dpinfer._tensor_shapes.fits` of a known shape."""
    k, m = shape.size, target.size
    if (k != m) if exact else (k > m):
        return False
    for i in range(k):
        d, t = shape[i], target[m - k + i]
        if not (d == t or (d == 1 and not exact)):
            return False
    return True


@nb.njit
def _raise_shape_error(name, shape, target, about, exact):
    """Raise ShapeCheck's error (object mode, entered only then)."""
    with nb.objmode():
        _refuse_shape(name, shape, target, about, exact)


def _refuse_shape(name, shape, target, about, exact) -> None:
    shown, wanted = tuple(int(d) for d in shape), tuple(int(t) for t in target)
    raise ValueError(_message(name, shown, wanted, about, exact))


@nb.njit(cache=True, error_model="numpy")
def _copy(x):
    return x.copy()


@nb.njit(cache=True, error_model="numpy")
def _noise_terms(s, form, table):
    """:func:`dpinfer.noise.terms.log_terms` of the packed form at ``s``."""
    cells, table = _unpacked(form, table)
    return log_terms(cells, table, np.ascontiguousarray(s))


class _Pool:
    """The slots of one compiled node: a ``(SLOTS, 4)`` table of words, freed with it."""

    def __init__(self):
        self.words = np.zeros((SLOTS, _WORDS), dtype=np.uint64)
        self.address = self.words.ctypes.data
        weakref.finalize(self, _free_states, self.words)


def _free_states(words: np.ndarray) -> None:
    for address in words[:, _ADDRESS]:
        if address:
            _LIBC.free(int(address))


@numba_funcify.register(MarginalLogp)
def _funcify_marginal_logp(op, node=None, **kwargs):
    """Return the compiled ``(a, b, form, table, state) -> (logp, score_a, score_b, state)``."""
    family, tol = op.family, op.tol
    pool = _Pool()
    words = np.uint64(pool.address)
    threaded_cells, home = _op.THREADED_CELLS, _op._home()
    serial = sweep_address(family, threaded=False)
    # the threaded sweep is compiled only for a node whose table may need it
    threaded = np.uint64(0)
    if _may_thread(node, threaded_cells):
        threaded = sweep_address(family, threaded=True)

    @nb.njit(error_model="numpy")
    def marginal_logp(a, b, form, table, state):
        # not cached (it reads numba's thread count): the cached sweep takes the answer
        code = serial
        if threaded and a.size >= threaded_cells and _process_id() == home:
            if nb.get_num_threads() > 1:
                code = threaded
        return _marginal_logp(family, tol, words, code, code != serial, a, b, form, table, state)

    marginal_logp.dpinfer_pool = pool  # the slots live as long as the compiled function
    return marginal_logp


def _kernel_types() -> tuple:
    """Return the numba types of a sweep's parameter vectors, form and tables (._forms)."""
    cells, table = unpacked(np.zeros(0), np.zeros(HEADER))
    return nb.typeof(parameters(np.zeros(1))), nb.typeof(cells), nb.typeof(table)


_VECTOR, _FORM, _TABLE = _kernel_types()
_INDICES = types.Array(types.int64, 1, "C")
_STATE = types.Array(types.float64, 2, "C")


def _sweep_types(family: types.Type) -> tuple:
    """Return the types of :func:`._sweep.marginal_sweep`'s arguments for a family's type."""
    sums = (_VECTOR, _VECTOR, _VECTOR, _INDICES)
    return (family, _VECTOR, _VECTOR, _FORM, _TABLE, types.float64, _STATE, *sums)


def _cells_types(family: types.Type) -> tuple:
    """Return the types of :func:`._sweep.sweep_cells`' arguments for a family's type."""
    return (*_sweep_types(family), types.int64, types.int64)


def _group_types(family: types.Type) -> tuple:
    """Return the types of :func:`._groups.group_sweep`'s arguments for a family's type."""
    given = (_INDICES.copy(readonly=True), _VECTOR.copy(readonly=True))
    sums = (_VECTOR, _VECTOR, _VECTOR, _INDICES)
    return (family, _VECTOR, _VECTOR, _FORM, _TABLE, types.float64, *given, *sums)


_call_sweep = _native.caller("marginal_sweep", _sweep_types)
_call_sweep_cells = _native.caller("sweep_cells", _cells_types)
_call_group_sweep = _native.caller("group_sweep", _group_types)


def sweep_address(family, *, threaded: bool) -> np.uint64:
    """Return the address of ``family``'s threaded or serial sweep (``_marginal_logp``'s code)."""
    if threaded:
        return np.uint64(_native.address(marginal_sweep, _sweep_types(nb.typeof(family))))
    return np.uint64(_native.address(sweep_cells, _cells_types(nb.typeof(family))))


def group_sweep_address(family) -> np.uint64:
    """Return the address of ``family``'s group sums (``_group_totals_logp``'s code)."""
    return np.uint64(_native.address(group_sweep, _group_types(nb.typeof(family))))


def _may_thread(node, threaded_cells: int) -> bool:
    """Whether the node's table may have ``threaded_cells`` cells (unknown: it may)."""
    released = None if node is None else node.inputs[2]
    return not (isinstance(released, Constant) and released.data.size < threaded_cells)


@nb.njit(cache=True, error_model="numpy")
def _marginal_logp(family, tol, words, code, threaded, a, b, form, table, state):
    """Return the Op's outputs: the sweep with the state of a slot of the pool at ``words``.

    ``code`` is :func:`sweep_address` of ``family``: the threaded sweep if ``threaded``
    (it spreads the cells over numba's threads), else the one on the calling thread.
    """
    n = a.size
    cells, table = _unpacked(form, table)
    logp, score_a, score_b = np.empty(n), np.empty(n), np.empty(n)
    terms = np.empty(n, dtype=np.int64)
    for x in (logp, score_a, score_b):
        _huge_pages(x)
    _huge_pages(terms)
    pa, pb = np.ascontiguousarray(a), np.ascontiguousarray(b)
    slot = _claim_slot(words)
    own = np.full((n, STATE), math.nan) if slot < 0 else _slot_state(words, slot, n)
    arguments = (family, pa, pb, cells, table, tol, own, logp, score_a, score_b, terms)
    if threaded:
        _call_sweep(code, arguments)
    else:
        _call_sweep_cells(code, (*arguments, nb.int64(0), n))
    if slot >= 0:
        _release(_word(words, slot, _TAKEN))
    if _has_nan(logp):
        _raise_refusal(np.isnan(logp), terms == BEYOND)
    return logp, score_a, score_b, state


@nb.njit(cache=True, error_model="numpy")
def _has_nan(x):
    """Whether ``x`` holds a NaN: ``np.isnan(x).any()`` without its temporary array.

    numba compiles that expression to a loop that allocates a byte per cell and takes
    about 1 ms at 10**6 cells, on one thread after the threaded sweep; this counting loop
    is vectorised (about 0.1 ms).
    """
    count = np.int64(0)
    for j in range(x.size):
        count += np.int64(np.isnan(x[j]))
    return count > 0


#: Linux's ``MADV_HUGEPAGE`` and the huge pages' size (x86-64, arm64 with 4 KB pages).
_MADV_HUGEPAGE, _HUGE = 14, 2 << 20
_LINUX = sys.platform.startswith("linux")


@nb.njit(cache=True)
def _huge_pages(x):
    """Ask Linux to back the fresh array ``x`` with huge pages where it spans whole ones.

    numba allocates an array with ``malloc``, whose memory Linux backs page by page as it
    is first written: an 8 MB output takes about 2,000 page faults, which at 10**6 cells
    cost about a third of the sweep's time on one thread (NumPy asks for huge pages for
    its own large arrays). A refusal (another system, THP off) leaves the pages as they are.
    """
    if not _LINUX or x.nbytes < 2 * _HUGE:
        return
    start = nb.uint64(x.ctypes.data)
    first = (start + nb.uint64(_HUGE - 1)) // nb.uint64(_HUGE) * nb.uint64(_HUGE)
    last = (start + nb.uint64(x.nbytes)) // nb.uint64(_HUGE) * nb.uint64(_HUGE)
    if last > first:
        _madvise(first, last - first, _MADV_HUGEPAGE)


@nb.njit(cache=True, error_model="numpy")
def _unpacked(released, shared):
    """:func:`._forms.unpacked` in compiled code: the grouped form and the tables (views).

    Of the types :func:`._forms.unpacked` gives, whatever the inputs' (read-only or
    not, contiguous or not): the sweeps compiled for Python's calls serve these too.
    """
    shared = np.ascontiguousarray(shared)
    groups, numbers = int(shared[0]), int(shared[1])
    start = HEADER + groups * _WIDTH
    stop = start + (numbers + 1) // 2
    records = _records(np.ascontiguousarray(shared[HEADER:start]).reshape((groups, _WIDTH)))
    group = _frozen(np.ascontiguousarray(shared[start:stop]).view(np.int32)[:numbers])
    form = Grouped(_frozen(np.ascontiguousarray(released)), group, records)
    return form, _frozen(np.ascontiguousarray(shared[stop:]))


@nb.njit(cache=True, error_model="numpy")
def _raise_refusal(failed, beyond):
    """Raise the Python implementation's error for the cells that failed (object mode)."""
    with nb.objmode():
        _refuse_aloud(_refuse, failed, beyond)


@nb.njit(cache=True, error_model="numpy")
def _claim_slot(words):
    """Take a free slot, the calling thread's last one first; -1 if every slot is taken."""
    me = _thread_id()
    for k in range(SLOTS):
        if _load(_word(words, k, _THREAD)) == me and _take(_word(words, k, _TAKEN)):
            return k
    for k in range(SLOTS):
        if _take(_word(words, k, _TAKEN)):
            _store(_word(words, k, _THREAD), me)
            return k
    return -1


@nb.njit(cache=True, error_model="numpy")
def _slot_state(words, slot, n):
    """Return the ``(n, STATE)`` state of a slot this thread holds (all NaN when new)."""
    address, cells = _word(words, slot, _ADDRESS), _word(words, slot, _CELLS)
    if _load(address) == 0 or _load(cells) != n:
        if _load(address) != 0:
            _free(_load(address))
        _store(address, _calloc(nb.uint64(max(n, 1) * STATE), nb.uint64(8)))
        _store(cells, nb.uint64(n))
        if _load(address) == 0:  # no memory: a fresh state for this sweep only
            _store(cells, nb.uint64(0))
            return np.full((n, STATE), math.nan)
        state = nb.carray(_doubles(_load(address)), (n, STATE))
        state[:] = math.nan
        return state
    return nb.carray(_doubles(_load(address)), (n, STATE))


@nb.njit(cache=True, inline="always")
def _word(words, slot, field):
    return words + nb.uint64(8 * (_WORDS * slot + field))


@intrinsic
def _frozen(typingctx, array):
    """Return the C-contiguous ``array`` typed read-only (the same array, no copy)."""
    if not (isinstance(array, types.Array) and array.layout == "C"):
        return None

    def codegen(context, builder, signature, args):
        return impl_ret_borrowed(context, builder, signature.return_type, args[0])

    return array.copy(readonly=True)(array), codegen


@intrinsic
def _records(typingctx, matrix):
    """View a C-contiguous ``(n, len(CELL))`` float64 matrix as ``n`` read-only CELL records."""
    if not (isinstance(matrix, types.Array) and matrix.ndim == 2 and matrix.layout == "C"):
        return None
    if matrix.dtype != types.float64:
        return None
    result = types.Array(_RECORD, 1, "C", readonly=True, aligned=True)

    def codegen(context, builder, signature, args):
        source = make_array(signature.args[0])(context, builder, args[0])
        target = make_array(signature.return_type)(context, builder)
        rows = cgutils.unpack_tuple(builder, source.shape)[0]
        itemsize = context.get_constant(types.intp, CELL.itemsize)
        populate_array(
            target,
            data=builder.bitcast(source.data, target.data.type),
            shape=cgutils.pack_array(builder, [rows]),
            strides=cgutils.pack_array(builder, [itemsize]),
            itemsize=itemsize,
            meminfo=source.meminfo,
            parent=source.parent,
        )
        return impl_ret_borrowed(context, builder, signature.return_type, target._getvalue())

    return result(matrix), codegen


def _word_pointer(builder, address):
    return builder.inttoptr(address, ir.IntType(64).as_pointer())


@intrinsic
def _take(typingctx, address):
    """Atomically set the word at ``address`` from 0 to 1: whether this call did."""

    def codegen(context, builder, signature, args):
        zero, one = ir.Constant(ir.IntType(64), 0), ir.Constant(ir.IntType(64), 1)
        pair = builder.cmpxchg(_word_pointer(builder, args[0]), zero, one, "acquire", "monotonic")
        return builder.extract_value(pair, 1)

    return types.boolean(types.uint64), codegen


@intrinsic
def _release(typingctx, address):
    """Atomically set the word at ``address`` to 0, after every write before it."""

    def codegen(context, builder, signature, args):
        store = builder.store_atomic(
            ir.Constant(ir.IntType(64), 0), _word_pointer(builder, args[0]), "release", 8
        )
        del store
        return context.get_dummy_value()

    return types.none(types.uint64), codegen


@intrinsic
def _load(typingctx, address):
    """Read the word at ``address`` atomically (another thread may write it meanwhile)."""

    def codegen(context, builder, signature, args):
        return builder.load_atomic(_word_pointer(builder, args[0]), "monotonic", 8)

    return types.uint64(types.uint64), codegen


@intrinsic
def _store(typingctx, address, value):
    """Atomically write ``value`` to the word at ``address``."""

    def codegen(context, builder, signature, args):
        builder.store_atomic(args[1], _word_pointer(builder, args[0]), "monotonic", 8)
        return context.get_dummy_value()

    return types.none(types.uint64, types.uint64), codegen


@intrinsic
def _doubles(typingctx, address):
    """Return ``address`` as a float64 pointer."""

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], ir.DoubleType().as_pointer())

    return types.CPointer(types.float64)(types.uint64), codegen


def _libc_call(builder, name, return_type, arguments):
    argument_types = [a.type for a in arguments]
    function_type = ir.FunctionType(return_type, argument_types)
    function = cgutils.get_or_insert_function(builder.module, function_type, name)
    return builder.call(function, arguments)


@intrinsic
def _thread_id(typingctx):
    """Return ``pthread_self()``: the calling thread."""

    def codegen(context, builder, signature, args):
        return _libc_call(builder, "pthread_self", ir.IntType(64), [])

    return types.uint64(), codegen


@intrinsic
def _process_id(typingctx):
    """Return ``getpid()``: the calling process."""

    def codegen(context, builder, signature, args):
        pid = _libc_call(builder, "getpid", ir.IntType(32), [])
        return builder.sext(pid, ir.IntType(64))

    return types.int64(), codegen


@intrinsic
def _madvise(typingctx, address, length, advice):
    """Call ``madvise(address, length, advice)``; its result is not needed."""

    def codegen(context, builder, signature, args):
        advice = builder.trunc(args[2], ir.IntType(32))
        _libc_call(builder, "madvise", ir.IntType(32), [args[0], args[1], advice])
        return context.get_dummy_value()

    return types.none(types.uint64, types.uint64, types.int64), codegen


@intrinsic
def _calloc(typingctx, count, size):
    """Return ``calloc(count, size)`` as an address (0: no memory)."""

    def codegen(context, builder, signature, args):
        return _libc_call(builder, "calloc", ir.IntType(64), list(args))

    return types.uint64(types.uint64, types.uint64), codegen


@intrinsic
def _free(typingctx, address):
    """Call ``free(address)``."""

    def codegen(context, builder, signature, args):
        _libc_call(builder, "free", ir.VoidType(), list(args))
        return context.get_dummy_value()

    return types.none(types.uint64), codegen
