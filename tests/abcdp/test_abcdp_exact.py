"""ABCDP's stated epsilon against the exact privacy loss of the sparse vector run it makes.

``SparseVector`` is replaced in ``dpinfer.samplers.abcdp`` by a recording subclass, so
the run that ``abcdp`` calibrates from ``epsilon_total`` is captured with the distances
it answers; :func:`dpinfer.audit.svt_privacy_loss` then integrates its output law on
that stream and every neighbouring one (each distance moved by at most the declared
sensitivity). Deterministic: no sampling error. The planted bug (threshold redrawn after
each acceptance on the budget of a single draw) violates the claim only on outputs of
probability around 1e-10, which the empirical audits cannot see.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpinfer import accounting
from dpinfer.audit import svt_privacy_loss

from ._helpers import MeanDistance, Recording, capture, neighbours

N = 10  # records: MeanDistance has sensitivity 1 / N
THRESHOLD = 0.5


class ResampleOnOnceBudget(Recording):
    """Planted bug: calibrates b from the no-resample budget whatever ``resample`` says."""

    @classmethod
    def from_privacy(cls, *, epsilon, threshold, c, sensitivity, resample=False):
        b = accounting.svt_scale(epsilon, sensitivity, c, resample=False)
        return cls(threshold, scale=b, c=c, sensitivity=sensitivity, resample=resample)


def _abcdp_run(monkeypatch, cls, *, c, resample, n_proposals):
    # every distance sits at the threshold: the stream on which the SVT loses most
    z = np.full(n_proposals, THRESHOLD)
    observed, _ = neighbours(N)
    return capture(
        monkeypatch,
        cls,
        observed,
        MeanDistance(),
        params={"z": z},
        pseudo_data=z,
        epsilon_total=1.0,
        epsilon_abc=THRESHOLD,
        c=c,
        resample=resample,
        privacy_rng=0,
    )


@pytest.mark.parametrize(
    ("c", "resample", "n_proposals"), [(2, False, 10), (4, True, 40), (1, True, 40)]
)
def test_abcdp_stated_epsilon_holds_exactly(monkeypatch, c, resample, n_proposals):
    run = _abcdp_run(monkeypatch, Recording, c=c, resample=resample, n_proposals=n_proposals)
    stated = run.output.posterior.attrs["epsilon"]
    assert run.svt.sensitivity == pytest.approx(1 / N)
    loss = svt_privacy_loss(run.svt, run.queries)
    assert not loss.refutes(stated), str(loss)
    assert loss.epsilon > 0.5 * stated  # the stream is a demanding one


def test_companion_abcdp_resampling_on_the_once_budget_is_refuted(monkeypatch):
    run = _abcdp_run(monkeypatch, ResampleOnOnceBudget, c=4, resample=True, n_proposals=40)
    stated = run.output.posterior.attrs["epsilon"]
    loss = svt_privacy_loss(run.svt, run.queries)
    assert loss.refutes(stated), str(loss)
    assert loss.epsilon == pytest.approx(1.58, abs=0.01)
