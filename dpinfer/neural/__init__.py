"""Neural posterior and likelihood estimation from a DP release (SPPE, SPLE).

The optional extra ``dpinfer[neural]``: Xiong, Ju and Zhang's (2023) sequential
private-data posterior estimation (:func:`sppe`) and likelihood estimation
(:func:`sple`) with conditional normalizing flows (PyTorch and zuko), for
simulators too slow or statistics too many for exact ABC. Only this package
imports torch; ``import dpinfer`` does not.
"""

try:
    import torch  # noqa: F401
    import zuko  # noqa: F401
except ImportError as err:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        "dpinfer.neural needs PyTorch and zuko, which the optional extra installs: "
        "pip install 'dpinfer[neural]'"
    ) from err

from ._c2st import c2st
from ._embeddings import CNNEmbedding, MLPEmbedding
from ._estimators import NeuralLikelihood, NeuralPosterior, load
from ._flows import SplineFlow
from ._mcmc import MCMC
from ._sequential import RoundInfo
from ._settings import SETTINGS
from ._training import Training
from .sple import sple
from .sppe import sppe

__all__ = [
    "CNNEmbedding",
    "MCMC",
    "MLPEmbedding",
    "NeuralLikelihood",
    "NeuralPosterior",
    "RoundInfo",
    "SETTINGS",
    "SplineFlow",
    "Training",
    "c2st",
    "load",
    "sple",
    "sppe",
]
