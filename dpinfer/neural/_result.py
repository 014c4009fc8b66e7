"""InferenceData of the neural methods, through :func:`dpinfer.results.to_inference_data`."""

from __future__ import annotations

import numpy as np

from .. import _validate
from .._rng import seed_entropy
from ..results import to_inference_data
from ..samplers._common import mechanism_constants, privacy_attrs

REFERENCES = {
    "sppe": (
        "Xiong, Ju and Zhang (2023). Simulation-based inference from privacy-protected data. "
        "Algorithm 1 (SPPE); APT after Greenberg, Nonnenmacher and Macke (2019)."
    ),
    "sple": (
        "Xiong, Ju and Zhang (2023). Simulation-based inference from privacy-protected data. "
        "Algorithm 2 (SPLE); SNL after Papamakarios, Sterratt and Murray (2019)."
    ),
}


def problem_info(mechanism, dequantise: bool) -> dict:
    """Describe the mechanism as an estimator keeps it (JSON-serialisable)."""
    return {
        "mechanism": repr(mechanism),
        "event_shape": list(mechanism.event_shape),
        "discrete": bool(mechanism.discrete),
        "dequantised": bool(dequantise),
        "constants": {
            k: np.asarray(v).tolist() for k, v in mechanism_constants(mechanism).items()
        },
        **privacy_attrs(mechanism),
    }


def total_draws(draws, chains) -> tuple[int, int]:
    """``(chains, total)`` with ``total`` = ``draws`` rounded up to a multiple of ``chains``."""
    draws = _validate.size("draws", draws)
    chains = _validate.size("chains", chains)
    return chains, chains * -(-draws // chains)


def neural_result(params, *, info, released, method, root, chains, sample_stats, **attrs):
    """Build the InferenceData of SPPE or SPLE draws (leading axis ``chains * draws``)."""
    return to_inference_data(
        params,
        chains=chains,
        sample_stats=sample_stats,
        observed=released,
        constant_data={k: np.asarray(v) for k, v in info["constants"].items()},
        attrs={
            "method": method,
            "reference": REFERENCES[method],
            "mechanism": info["mechanism"],
            "epsilon": info["epsilon"],
            "delta": info["delta"],
            "seed": seed_entropy(root),
            **attrs,
        },
    )
