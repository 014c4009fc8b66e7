"""Privacy mechanisms: the curator's release and the analyst's density."""

from .base import Mechanism, Privacy
from .binomial import BinomialRelease
from .discrete import DiscreteGaussian, DiscreteLaplace
from .gaussian import Gaussian
from .laplace import Laplace
from .svt import SparseVector, SVTResult
from .thresholded import Thresholded

__all__ = [
    "BinomialRelease",
    "DiscreteGaussian",
    "DiscreteLaplace",
    "Gaussian",
    "Laplace",
    "Mechanism",
    "Privacy",
    "SVTResult",
    "SparseVector",
    "Thresholded",
]
