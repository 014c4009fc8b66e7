"""Privacy accounting: composition, calibration and conversions.

Every function here is a closed form (or the root of one) computed from
parameters; nothing is inferred from samples.

References
----------
.. [1] Balle, B. and Wang, Y.-X. (2018). Improving the Gaussian mechanism for
   differential privacy: analytical calibration and optimal denoising. ICML.
.. [2] Dwork, C. and Roth, A. (2014). The algorithmic foundations of
   differential privacy. Theorem A.1 (classical Gaussian calibration).
.. [3] Bun, M. and Steinke, T. (2016). Concentrated differential privacy.
.. [4] Canonne, C., Kamath, G. and Steinke, T. (2020). The discrete Gaussian
   for differential privacy. NeurIPS.
.. [5] Mironov, I. (2017). Renyi differential privacy. CSF.
.. [6] Lyu, M., Su, D. and Li, N. (2017). Understanding the sparse vector
   technique for differential privacy. PVLDB.
.. [7] Park, M., Vinaroz, M. and Jitkrittum, W. (2021). ABCDP: approximate
   Bayesian computation with differential privacy. Entropy 23(8), Theorem 1.
"""

from __future__ import annotations

from ._discrete_gaussian import discrete_gaussian_delta
from ._gaussian import (
    gaussian_delta,
    gaussian_epsilon,
    gaussian_sigma_analytic,
    gaussian_sigma_classical,
)
from ._maps import (
    abcdp_gaussian_epsilon,
    abcdp_gaussian_sigma,
    binomial_release_epsilon,
    laplace_epsilon,
    soft_abcdp_epsilon,
    soft_abcdp_rdp,
    soft_abcdp_sigma,
    svt_epsilon,
    svt_scale,
)
from ._privacy import Privacy, compose
from ._zcdp import rdp_to_approx, zcdp_gaussian, zcdp_to_approx

__all__ = [
    "Privacy",
    "abcdp_gaussian_epsilon",
    "abcdp_gaussian_sigma",
    "binomial_release_epsilon",
    "compose",
    "discrete_gaussian_delta",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_sigma_analytic",
    "gaussian_sigma_classical",
    "laplace_epsilon",
    "rdp_to_approx",
    "soft_abcdp_epsilon",
    "soft_abcdp_rdp",
    "soft_abcdp_sigma",
    "svt_epsilon",
    "svt_scale",
    "zcdp_gaussian",
    "zcdp_to_approx",
]
