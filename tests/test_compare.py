import numpy as np
import pytest

from dpinfer.compare import compare_posteriors, mmd


def test_same_distribution_passes():
    # Two independent N(0, 1) samples: |z| > 4 on any of 4 statistics has probability < 3e-4.
    rng = np.random.default_rng(11)
    c = compare_posteriors({"x": rng.normal(size=5000)}, {"x": rng.normal(size=5000)})
    assert c.max_abs_z() < 4
    assert c.per_parameter["x"]["ks_pvalue"] > 1e-3


def test_shifted_distribution_is_flagged():
    # Planted bug: a 0.2 sd shift with 5000 draws each gives a mean z near 10.
    rng = np.random.default_rng(12)
    c = compare_posteriors({"x": rng.normal(size=5000)}, {"x": rng.normal(0.2, size=5000)})
    assert c.max_abs_z() > 6
    assert c.per_parameter["x"]["wasserstein"] == pytest.approx(0.2, abs=0.05)


def test_vector_parameters_are_split_into_components():
    rng = np.random.default_rng(13)
    a = {"w": rng.dirichlet([1, 1, 1], size=3000)}
    b = {"w": rng.dirichlet([1, 1, 1], size=3000)}
    c = compare_posteriors(a, b)
    assert set(c.per_parameter) == {"w[0]", "w[1]", "w[2]"}


def _beta_samples(seed):
    rng = np.random.default_rng(seed)
    return {"beta": rng.normal(size=(400, 2)), "sigma": rng.gamma(2.0, size=400)}


def test_a_vector_is_selected_by_its_name_or_by_one_coordinate():
    a, b = _beta_samples(1), _beta_samples(2)
    by_name = compare_posteriors(a, b, var_names=["beta"])
    assert list(by_name.per_parameter) == ["beta[0]", "beta[1]"]
    one = compare_posteriors(a, b, var_names=["beta[0]"])
    assert list(one.per_parameter) == ["beta[0]"]
    assert one.per_parameter["beta[0]"] == by_name.per_parameter["beta[0]"]
    mixed = compare_posteriors(a, b, var_names=["sigma", "beta", "beta[1]"])
    assert list(mixed.per_parameter) == ["sigma", "beta[0]", "beta[1]"]


def test_a_vector_is_selected_by_its_name_in_inference_data():
    from dpinfer.results import to_inference_data

    a, b = (to_inference_data(_beta_samples(s), attrs={}, chains=2) for s in (3, 4))
    assert list(compare_posteriors(a, b, var_names=["beta"]).per_parameter) == [
        "beta[0]",
        "beta[1]",
    ]


def test_a_missing_or_mismatched_variable_is_named():
    a, b = _beta_samples(5), _beta_samples(6)
    with pytest.raises(ValueError, match=r"var_names: parameter 'gamma' is missing from a and b"):
        compare_posteriors(a, b, var_names=["gamma"])
    b3 = {**b, "beta": np.zeros((400, 3))}
    with pytest.raises(ValueError, match=r"'beta' has the coordinates .* in a but .* in b"):
        compare_posteriors(a, b3, var_names=["beta"])


def test_mmd_separates_and_matches():
    rng = np.random.default_rng(14)
    x, y = rng.normal(size=(800, 2)), rng.normal(size=(800, 2))
    z = rng.normal(1.0, size=(800, 2))
    assert mmd(x, y) < 0.1 < mmd(x, z)


def test_bad_inputs():
    with pytest.raises(TypeError, match="a must be InferenceData-like"):
        compare_posteriors([1, 2], {"x": [1, 2]})
    with pytest.raises(ValueError, match="share no parameter"):
        compare_posteriors({"x": np.ones(5)}, {"y": np.ones(5)})
