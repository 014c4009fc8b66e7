"""One suppressed cell's sum, at the sigmas and rates the pageviews posterior visits.

The cells are those of ``dpinfer run pageviews`` (:mod:`dpinfer.models.pageviews`, 280 days,
2,520 cells): a Poisson count released with Wikimedia's discrete Gaussian noise (sigma 18.3,
90, 179.8 by tier) and suppressed below the tier's threshold. The rates are the true ones
(the posterior sits there) moved along a path of small steps, as a sampler's leapfrog steps
move them (each step multiplies every rate by ``exp(step u)``, ``u`` standard normal; ``--step``
0.002 by default: a leapfrog step of the pageviews posterior moves a country's log views by
about that much).

For each tier and for suppressed and published cells apart: the terms summed per cell and
the CPU nanoseconds per term and per cell of ``dpinfer.marginal._op.sweep`` with the state
it keeps between calls (as the Op calls it: on the calling thread below 2**17 cells, so the
CPU time is one thread's), on the path:

* ``sweep``: as the Op calls it (each kind of cell on its fast path where it has one);
* ``general``: every cell by the general sum (``._kernels._cell``), the reference.

Run ``python benchmarks/suppressed_cells.py [--step 0.002]``. CPU time
(``time.process_time``): on a shared machine wall time is noisy.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dpinfer.marginal import _poisson
from dpinfer.marginal._families import POISSON
from dpinfer.marginal._forms import joined_form, kernel_form, release_form
from dpinfer.marginal._op import sweep
from dpinfer.models import pageviews as pv

TOL = 1e-10
STEPS = 200
DAYS = 280


def _path(rate: np.ndarray, steps: int, size: float, rng) -> list[np.ndarray]:
    walk = np.cumsum(size * rng.standard_normal((steps, rate.size)), axis=0)
    return [rate * np.exp(w) for w in walk]


def sweep_arrays(n: int, *, general: bool):
    """A fresh state of ``n`` cells (all prepared for the general path if ``general``), the
    outputs (logp, score_a, score_b, terms) and the zeros of ``sweep``."""
    state = np.full((n, _poisson.STATE), np.nan)
    if general:
        state[:, _poisson.STEP] = -1.0  # prepared, for the general path
    out = (np.empty(n), np.empty(n), np.empty(n), np.empty(n, dtype=np.int64))
    return state, out, np.zeros(n)


def _run(rates, form, table, *, general: bool):
    """CPU seconds per sweep along ``rates`` and the terms of each cell (mean over the path)."""
    state, out, zeros = sweep_arrays(rates[0].size, general=general)
    logp, terms = out[0], out[3]
    n = rates[0].size
    sweep(POISSON, rates[0], zeros, form, table, TOL, state, *out)
    total = np.zeros(n)
    start = time.process_time()
    for lam in rates:
        sweep(POISSON, lam, zeros, form, table, TOL, state, *out)
        total += terms
    return (time.process_time() - start) / len(rates), total / len(rates), logp


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--step", type=float, default=0.002)
    step = parser.parse_args(argv).step
    table_, mech = pv.simulate(days=DAYS), pv.mechanism(days=DAYS)
    released = table_["released"]
    sigma = mech.mechanism.sigma.ravel()
    hidden = np.isnan(released).ravel()
    rng = np.random.default_rng(7)
    print(
        f"== {released.size:,} cells ({hidden.sum()} suppressed), {STEPS} sweeps along a path "
        f"of steps of {step:g} in the log rates; tol {TOL:g}; CPU =="
    )
    for s in np.unique(sigma):
        for suppressed in (True, False):
            cells = np.flatnonzero((sigma == s) & (hidden == suppressed))
            sub = released.ravel()[cells]
            form, table = kernel_form(
                *joined_form(
                    [release_form(_sub_mechanism(mech, cells), sub, latent_discrete=True)]
                )
            )
            rates = _path(table_["rate"].ravel()[cells], STEPS, step, rng)
            cost = {}
            for path in ("sweep", "general"):
                seconds, terms, _ = _run(rates, form, table, general=path == "general")
                cost[path] = (seconds, terms)
            lam = table_["rate"].ravel()[cells]
            terms = cost["sweep"][1]
            print(
                f"sigma {s:5.1f} {'suppressed' if suppressed else 'published':>10} "
                f"{cells.size:4d} cells, rates {lam.min():6.0f}-{lam.max():6.0f}: "
                f"terms/cell {terms.mean():6.1f} "
                f"(min {terms.min():4.0f}, max {terms.max():4.0f}); "
                + "; ".join(
                    f"{p} {c[0] / c[1].sum() * 1e9:5.2f} ns/term, {c[0] / cells.size * 1e9:6.0f} "
                    "ns/cell"
                    for p, c in cost.items()
                ),
                flush=True,
            )


def _sub_mechanism(mech, cells):
    import dpinfer as dp

    return dp.Thresholded(
        dp.DiscreteGaussian(mech.mechanism.sigma.ravel()[cells], event_shape=(cells.size,)),
        threshold=mech.threshold.ravel()[cells],
        publish=mech.publish,
    )


if __name__ == "__main__":
    main()
