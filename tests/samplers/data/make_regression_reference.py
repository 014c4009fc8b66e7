"""Write the NUTS reference posteriors of the linear regression used by the DA-MCMC tests.

NUTS on the data-augmentation model of ``linear_regression.pymc_reference`` (all 100
latent records, the clamp, the Laplace release) is an independent route to the exact
posterior, but at small noise it is slow: trees of depth 10 at epsilon = 100, where
2 x 2000 iterations took 53 minutes on a busy machine (epsilon = 1, 10, 30: 2, 4 and 15
minutes). The tests therefore read its draws from ``regression_nuts_reference.npz``,
written by this script:

    python tests/samplers/data/make_regression_reference.py

The confidential dataset is ``confidential_data(rng=2023)``, released at each epsilon with
the seed in ``RELEASE_SEEDS`` (those of ``tutorials/07_linear_regression.ipynb``). The file
holds, per epsilon, the release and the draws of ``beta`` by chain, with the settings,
seeds, diagnostics and run times in ``meta`` (JSON).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

import dpinfer as dp
from dpinfer.models import linear_regression as lr

PATH = Path(__file__).with_name("regression_nuts_reference.npz")
DATASET_SEED = 2023
RELEASE_SEEDS = {1.0: 102, 10.0: 10, 30.0: 105, 100.0: 106}
SETTINGS = {
    1.0: {"draws": 2000, "tune": 1000},
    10.0: {"draws": 2000, "tune": 1000},
    30.0: {"draws": 1500, "tune": 1000},
    100.0: {"draws": 1000, "tune": 1000},
}
CHAINS = 2
NUTS_SEED = 4242


def releases() -> dict[float, np.ndarray]:
    """The release of the reference dataset at every epsilon of the grid."""
    x, y = lr.confidential_data(rng=DATASET_SEED)
    return {eps: lr.release(x, y, epsilon=eps, rng=seed) for eps, seed in RELEASE_SEEDS.items()}


def main() -> int:
    arrays, meta = {}, {"dpinfer_version": dp.__version__, "chains": CHAINS, "runs": {}}
    for eps, released in releases().items():
        start = time.perf_counter()
        idata = lr.pymc_reference(
            released, epsilon=eps, chains=CHAINS, rng=NUTS_SEED, **SETTINGS[eps]
        )
        seconds = time.perf_counter() - start
        attrs = idata.posterior.attrs
        key = f"{eps:g}"
        arrays[f"released_{key}"] = released
        # (chain, draw, 3), in single precision: ample for Monte Carlo comparisons
        arrays[f"beta_{key}"] = np.asarray(idata.posterior["beta"], dtype=np.float32)
        meta["runs"][key] = {
            **SETTINGS[eps],
            "release_seed": RELEASE_SEEDS[eps],
            "seconds": seconds,
            "ess": float(attrs["ess"]),
            "rhat_max": float(attrs["rhat_max"]),
            "divergences": int(attrs["divergences"]),
        }
        print(f"epsilon {key}: {seconds:.0f} s, {meta['runs'][key]}", flush=True)
    meta.update(dataset_seed=DATASET_SEED, nuts_seed=NUTS_SEED)
    np.savez_compressed(PATH, meta=json.dumps(meta), **arrays)
    print(f"wrote {PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
