"""What the two examples with a Laplace release of statistics share (Xiong et al. 2023).

The naive Bayes (Supplement S3.3) and linear regression (Section 4.2) examples
release their statistics with the same mechanism family and take the same
arguments; their own checks are in ``test_naive_bayes.py`` and
``test_linear_regression.py``.
"""

from __future__ import annotations

import pytest

from dpinfer.models import linear_regression as lr
from dpinfer.models import naive_bayes as nb


@pytest.mark.parametrize("example", [nb, lr], ids=["naive_bayes", "linear_regression"])
@pytest.mark.parametrize("eps", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_epsilon_is_refused_by_name(example, eps):
    records = example.confidential_data(rng=0)
    with pytest.raises(ValueError, match="epsilon"):
        example.mechanism(epsilon=eps)
    with pytest.raises(ValueError, match="epsilon"):
        example.release(*records, epsilon=eps, rng=1)


@pytest.mark.parametrize("example", [nb, lr], ids=["naive_bayes", "linear_regression"])
def test_a_good_epsilon_releases_the_statistics(example):
    # companion: the same calls with a valid epsilon succeed, so the refusals above are
    # about epsilon and not about the records
    records = example.confidential_data(rng=0)
    released = example.release(*records, epsilon=1.0, rng=1)
    assert released.shape == example.mechanism(epsilon=1.0).event_shape
