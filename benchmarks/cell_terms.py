"""CPU nanoseconds per term of the Poisson cells' sums, on their fast paths and on the general one.

The cells:

* ``county``: the 10,000 cells of ``benchmarks/tables.py`` (a Poisson count released with
  discrete Gaussian noise) at ``rho`` 0.5 and 0.05 zCDP (sigma 1 and 3.2: windows of about
  13 and 37 terms a cell, where at 3.2 three cells in four take every other term, about 23
  terms summed a cell), summed by :mod:`dpinfer.marginal._poisson`;
* ``pageviews``: the 2,520 cells of ``dpinfer run pageviews`` at 280 days by tier (sigma 18, 90,
  180), published ones (:mod:`dpinfer.marginal._poisson`) and suppressed ones
  (:mod:`dpinfer.marginal._suppressed`): hundreds of terms a cell.

Each group is swept ``--steps`` times along a path of small steps in the log rates (as a
sampler's leapfrog steps move them) by ``dpinfer.marginal._op.sweep`` with the state it
keeps (as the Op calls it: on the calling thread below 2**17 cells, so the CPU time is one
thread's; the threaded sweep would add its idle threads' spinning); the figure is the best
of ``--repeats`` passes: CPU nanoseconds per term summed and per cell, and the ratio of
the general sum (``._kernels._cell``, every cell forced onto it) to the fast path.

Run ``python benchmarks/cell_terms.py``. CPU time (``time.process_time``): on a shared machine
wall time is noisy.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

import dpinfer as dp
from dpinfer.marginal._families import POISSON
from dpinfer.marginal._forms import joined_form, kernel_form, release_form
from dpinfer.marginal._op import sweep
from dpinfer.models import pageviews as pv

sys.path.insert(0, str(Path(__file__).parent))
import tables  # noqa: E402
from suppressed_cells import _path as path  # noqa: E402
from suppressed_cells import sweep_arrays  # noqa: E402

TOL = 1e-10


def sweeps(rates, form, table, *, general: bool, repeats: int) -> tuple[float, int]:
    """Best CPU seconds of one pass along ``rates``, and the terms summed in it."""
    state, out, zeros = sweep_arrays(rates[0].size, general=general)
    terms = out[3]
    sweep(POISSON, rates[0], zeros, form, table, TOL, state, *out)
    best, total = math.inf, 0
    for _ in range(repeats):
        total = 0
        start = time.process_time()
        for lam in rates:
            sweep(POISSON, lam, zeros, form, table, TOL, state, *out)
            total += int(terms.sum())
        best = min(best, time.process_time() - start)
    return best, total


def groups(steps: int):
    """(name, rates along the path, form, table) of each group of cells."""
    rng = np.random.default_rng(1)
    for rho in (0.5, 0.05):
        _, mechanism, released = tables.table(10_000, rho)
        form, table = kernel_form(
            *joined_form([release_form(mechanism, np.asarray(released), latent_discrete=True)])
        )
        rate = np.maximum(np.asarray(released, dtype=float), 1.0)
        yield f"county rho {rho:g}", path(rate, steps, 0.002, rng), form, table
    data, mech = pv.simulate(days=280), pv.mechanism(days=280)
    released = data["released"].ravel()
    sigma, hidden = mech.mechanism.sigma.ravel(), np.isnan(released)
    for s in np.unique(sigma):
        for suppressed in (False, True):
            cells = np.flatnonzero((sigma == s) & (hidden == suppressed))
            sub = dp.Thresholded(
                dp.DiscreteGaussian(sigma[cells], event_shape=(cells.size,)),
                threshold=mech.threshold.ravel()[cells],
                publish=mech.publish,
            )
            form, table = kernel_form(
                *joined_form([release_form(sub, released[cells], latent_discrete=True)])
            )
            name = f"pageviews sigma {s:.0f} {'suppressed' if suppressed else 'published'}"
            yield name, path(data["rate"].ravel()[cells], steps, 0.002, rng), form, table


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"== {args.steps} sweeps along a path, best of {args.repeats}; tol {TOL:g}; CPU ==")
    for name, rates, form, table in groups(args.steps):
        cells = rates[0].size * len(rates)
        fast, terms = sweeps(rates, form, table, general=False, repeats=args.repeats)
        general, _ = sweeps(rates, form, table, general=True, repeats=args.repeats)
        print(
            f"{name:>32}: {terms / cells:6.1f} terms/cell  fast {fast / terms * 1e9:5.2f} "
            f"ns/term {fast / cells * 1e9:6.0f} ns/cell  general {general / terms * 1e9:5.2f} "
            f"ns/term  general / fast {general / fast:5.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
