"""The vectorised ESS and R-hat of ``dpinfer._diagnostics`` equal ArviZ's, component by component.

ArviZ is the independent reference: its ``ess`` (bulk and tail) and ``rhat`` (rank) on
each component, against one vectorised call for all of them, on autocorrelated chains
of every length from 4 draws, with ties, constant components, odd lengths and one chain.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpinfer import _diagnostics, results


def _arviz():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import arviz

    return arviz


def _chains(rng, chains, n, k=4):
    x = rng.normal(size=(chains, n, k))
    phi = rng.uniform(-0.9, 0.99)
    for t in range(1, n):
        x[:, t] += phi * x[:, t - 1]
    x[..., 1] += rng.normal(size=(chains, 1)) * rng.uniform(0, 3)  # chains that disagree
    x[..., 2] = np.round(x[..., 2])  # ties
    x[..., 3] = 1.5  # constant
    return x


@pytest.mark.parametrize("seed", range(2))
def test_equal_to_arviz_per_component(seed):
    az = _arviz()
    rng = np.random.default_rng(seed)
    for chains in (1, 2, 4):
        for n in (4, 5, 9, 26, 27, 80):
            x = _chains(rng, chains, n)
            bulk, tail = _diagnostics.bulk_ess(x), _diagnostics.tail_ess(x)
            rhat = _diagnostics.rank_rhat(x)
            for j in range(x.shape[2]):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # ArviZ's own warnings on tiny chains
                    expected = (
                        az.ess(x[..., j]),
                        az.ess(x[..., j], method="tail"),
                        az.rhat(x[..., j]) if chains > 1 else np.nan,
                    )
                np.testing.assert_allclose(
                    [bulk[j], tail[j], rhat[j]], expected, rtol=1e-10, equal_nan=True
                )


def test_invalid_components_are_nan():
    x = np.random.default_rng(0).normal(size=(2, 10, 3))
    x[0, 3, 1] = np.nan
    assert np.isnan(_diagnostics.bulk_ess(x)[1]) and np.isfinite(_diagnostics.bulk_ess(x)[0])
    assert np.isnan(_diagnostics.bulk_ess(x[:, :3])).all()  # fewer than 4 draws
    assert np.isnan(_diagnostics.rank_rhat(x[:1])).all()  # one chain


def test_result_diagnostics_are_arviz_figures():
    az = _arviz()
    rng = np.random.default_rng(5)
    draws = {"a": rng.normal(size=(4, 50)).cumsum(axis=1), "b": rng.normal(size=(4, 50, 2))}
    draws["b"][..., 1] = 2.0  # constant: left out
    got = results._draw_diagnostics(draws, 123.0)
    parts = [draws["a"], draws["b"][..., 0]]
    assert got["ess_bulk"] == pytest.approx(min(az.ess(p) for p in parts), rel=1e-10)
    assert got["ess_tail"] == pytest.approx(
        min(az.ess(p, method="tail") for p in parts), rel=1e-10
    )
    assert got["rhat_max"] == pytest.approx(max(az.rhat(p) for p in parts), rel=1e-10)
    assert got["ess"] == min(123.0, got["ess_bulk"]) and got["chains"] == 4
