"""Simulation-based calibration (SBC) of posterior samplers: :func:`sbc` and :class:`SBCResult`.

Calibration here is of posteriors, checked by simulation (Talts et al. 2018), not the
calibration of a mechanism's noise to a privacy budget (:mod:`dpinfer.accounting`).
"""

from ._result import SBCResult
from ._sbc import DegenerateDrawsWarning, sbc

__all__ = ["DegenerateDrawsWarning", "SBCResult", "sbc"]
