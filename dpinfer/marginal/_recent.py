"""The last few evaluations of a marginal Op's node, found again by their parameters.

PyMC's NUTS starts each iteration by evaluating the log-density and its gradient at the
point the chain is at, a point its previous trajectory evaluated already: one evaluation
in seven on the pageviews example (2 chains of 300 + 300 iterations: 1,200 of 8,886),
each a whole sweep of the table. A node of :class:`._op.MarginalLogp` (or of
:class:`._group_op.GroupTotalsLogp`) keeps its last
:data:`EVALUATIONS` results (copies: PyTensor may overwrite the arrays an Op returns),
with the parameters ``a, b`` they came from, and answers the same parameters again
with copies of them. Parameters are compared exactly (a cheap fingerprint first). A
result found again is the sweep's own at those parameters; a sweep run again there would
start from another state (:mod:`._poisson`), which changes a few cells' sums within
their error bounds (on the pageviews example, 2 of 1,199 results again, by at most
4e-10 relative), never more.

Keeping costs a copy of five floats a cell each evaluation, and a result found again saves
a sweep: worth it where NUTS's trajectories are short. A node counts its evaluations in
windows of :data:`WINDOW`: after one in which fewer than :data:`WORTH` of them were found
again, it keeps none for :data:`SKIPPED` windows, then keeps them for one window again;
each such trial that fails doubles the windows skipped after it, up to :data:`LONGEST`, and
one that succeeds starts again from :data:`SKIPPED`. On the county model of
``benchmarks/tables.py`` at rho 0.05 (10,000 cells, about 60 evaluations an iteration) 480
of 37,766 evaluations were found again, and keeping every evaluation cost 6% of NUTS's
time (keeping one window in four, about 20 us of a 0.8 ms evaluation); on the pageviews
example (about 7 an iteration) one in seven is, and the node keeps them throughout. The
decisions follow from the order of the evaluations alone.

Each kept evaluation holds five floats a cell (``a``, ``b`` and the three outputs),
and a node keeps at most :data:`BUDGET` bytes of them: 16 evaluations of a table of up to
some 26,000 cells, 4 of 100,000 (160 bytes a cell), none of more than some 400,000, where
a model's memory per cell is what limits it (and the 10**6- and 10**7-cell figures of
``benchmarks/tables.py`` are those of a node that keeps nothing).
"""

from __future__ import annotations

import functools
from collections import deque

import numpy as np

from ..noise.form import Grouped
from ._forms import unpacked

__all__ = ["BUDGET", "EVALUATIONS", "LONGEST", "SKIPPED", "WINDOW", "WORTH", "Recent", "recent_of"]

#: Evaluations a node keeps: NUTS's next iteration starts from one of the last 2**depth
#: points it evaluated (8 kept found 1,194 of the pageviews example's 1,200; 16, 1,199).
EVALUATIONS = 16
#: Bytes of kept evaluations per node.
BUDGET = 2**24
#: Evaluations a window.
WINDOW = 256
#: The share of a window's evaluations found again below which a node stops keeping them:
#: where a copy of the five floats costs about a twelfth of a sweep.
WORTH = 1 / 12
#: Windows a node keeps nothing after one whose share found again was below :data:`WORTH`.
SKIPPED = 3
#: The most windows a node keeps nothing after a failed trial (:data:`SKIPPED`, doubled).
LONGEST = 48
_FLOATS_PER_CELL = 5


class Recent:
    """The last evaluations of one node, whose constant inputs are ``constants``.

    ``constants[0]`` is the releases' form, at least one number a cell. None are kept
    if they would not fit in :data:`BUDGET`.
    """

    def __init__(self, *constants: np.ndarray, evaluations: int | None = None):
        self._constants = constants
        wanted = EVALUATIONS if evaluations is None else evaluations
        fits = BUDGET // (_FLOATS_PER_CELL * 8 * max(constants[0].size, 1))
        self._kept: deque = deque(maxlen=min(wanted, fits))
        self._seen = self._found = self._skipping = 0
        self._next_skip = SKIPPED

    def __reduce__(self):
        # a compiled function sent to another process (pm.sample's chains) starts afresh
        return Recent, self._constants

    @functools.cached_property
    def unpacked(self) -> tuple[Grouped, np.ndarray]:
        """The grouped form and the tables of ``constants[:2]``, as :func:`._forms.unpacked`.

        Views of the constants, made once: each evaluation's own cost some microseconds.
        """
        return unpacked(*self._constants[:2])

    def belongs_to(self, *constants: np.ndarray) -> bool:
        """Return whether these are the evaluations of a node of these constants (the arrays)."""
        return len(constants) == len(self._constants) and all(
            x is y for x, y in zip(constants, self._constants, strict=True)
        )

    def find(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...] | None:
        """Return copies of the outputs of an evaluation at exactly ``a, b``, or None.

        Each call counts as an evaluation of the node (see :data:`WINDOW`).
        """
        if self._kept.maxlen == 0:
            return None
        self._count_evaluation()
        if not self._kept:
            return None
        key = _fingerprint(a, b)
        for kept_key, kept_a, kept_b, outputs in reversed(self._kept):
            if kept_key == key and np.array_equal(kept_a, a) and np.array_equal(kept_b, b):
                self._found += 1
                return tuple(x.copy() for x in outputs)
        return None

    def keep(self, a: np.ndarray, b: np.ndarray, outputs: tuple[np.ndarray, ...]) -> None:
        """Keep copies of ``a, b`` and of the ``outputs`` of the evaluation there."""
        if self._kept.maxlen and not self._skipping:
            copies = tuple(x.copy() for x in (a, b, *outputs))
            self._kept.append((_fingerprint(a, b), *copies[:2], copies[2:]))

    def _count_evaluation(self) -> None:
        """End a window every :data:`WINDOW` evaluations: keep in the next one, or not."""
        self._seen += 1
        if self._seen < WINDOW:
            return
        if self._skipping:
            self._skipping -= 1
        elif self._found < WORTH * WINDOW:
            self._skipping = self._next_skip
            self._next_skip = min(2 * self._next_skip, LONGEST)
            self._kept.clear()
        else:
            self._next_skip = SKIPPED
        self._seen = self._found = 0


def recent_of(node, *constants: np.ndarray) -> Recent:
    """Return the evaluations ``node`` keeps (none for a direct call, without a node).

    They belong to its ``constants`` (the same arrays): a node cloned with other
    constants, which copies the first one's tag, starts afresh.
    """
    if node is None:
        return Recent(*constants, evaluations=0)
    recent = getattr(node.tag, "dpinfer_recent", None)
    if recent is None or not recent.belongs_to(*constants):
        recent = node.tag.dpinfer_recent = Recent(*constants)
    return recent


def _fingerprint(a: np.ndarray, b: np.ndarray) -> tuple[int, int]:
    """Return the sums of the parameters' bits modulo 2**64 (equal for equal parameters)."""
    return int(a.view(np.uint64).sum()), int(b.view(np.uint64).sum())
