"""Shared by the sparse vector tests: planted bugs, and the exact law of indicator patterns.

The law is computed independently of :mod:`dpinfer.audit.svt`: scipy's ``quad`` over the
threshold noise, one integral per threshold draw, split at the kinks of the Laplace
densities.
"""

from __future__ import annotations

import numpy as np
import scipy.integrate as si
import scipy.stats as st

import dpinfer as dp

# --- planted bugs, through the hooks the class keeps apart for this purpose ---------------


class NoQueryNoise(dp.SparseVector):
    """Bug: the queries are compared without noise."""

    def _query_scale(self):
        return 0.0


class QueryNoiseNotScaledByC(dp.SparseVector):
    """Bug: query noise Lap(2b/c), as if epsilon_2 paid for one positive instead of c."""

    def _query_scale(self):
        return 2 * self.scale / self.c


class NoHalting(dp.SparseVector):
    """Bug: keeps answering after c positives."""

    def _halts(self):
        return False


# --- the exact law ----------------------------------------------------------------------


def patterns(m: int, c: int, halts: bool = True):
    """Every indicator sequence a run over ``m`` queries can publish."""
    out = []

    def grow(prefix, positives):
        if len(prefix) == m or (halts and positives == c):
            out.append(tuple(prefix))
            return
        grow([*prefix, False], positives)
        grow([*prefix, True], positives + 1)

    grow([], 0)
    return out


def pattern_probability(svt, queries, pattern):
    """P(pattern) = prod over threshold draws of int Lap_b(rho) prod_i P(answer_i | rho) d rho."""
    b, s, t = svt.scale, 2 * svt.scale, svt.threshold
    segments, current = [], []
    for q, answer in zip(queries, pattern, strict=False):
        current.append((q, answer))
        if answer and svt.resample:
            segments.append(current)
            current = []
    if current:
        segments.append(current)
    prob = 1.0
    for seg in segments:

        def integrand(rho, seg=seg):
            p = st.laplace.pdf(rho, scale=b)
            for q, answer in seg:
                below = st.laplace.cdf(t + rho - q, scale=s)
                p *= below if answer else 1.0 - below
            return p

        # integrate piecewise between the kinks of the Laplace densities, for accuracy
        edges = [-np.inf, *sorted({0.0, *(q - t for q, _ in seg)}), np.inf]
        value = sum(
            si.quad(integrand, lo, hi, epsabs=1e-14, limit=200)[0]
            for lo, hi in zip(edges[:-1], edges[1:], strict=True)
        )
        prob *= value
    return prob
