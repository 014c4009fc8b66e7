"""Auditing privacy claims: empirical lower bounds, and exact verification.

A privacy claim bounds, for every output event and every pair of neighbouring
inputs, how much likelier the event is on one input than on the other. Two
independent checks sit beside the closed forms of :mod:`dpinfer.accounting`:

- :func:`audit_epsilon` (:mod:`.empirical`) samples the mechanism on chosen
  neighbours and turns output frequencies into a statistical lower bound on
  epsilon. It sees only events of reasonable probability.
- Exact verification recomputes the privacy loss from the output law itself,
  so that violations on events of probability 1e-10 are seen too:
  :func:`verify_gaussian` (:mod:`.gaussian`) from the closed-form privacy loss
  distribution of the Gaussian and discrete Gaussian mechanisms, and
  :func:`svt_privacy_loss` (:mod:`.svt`) by numerical integration of the
  sparse vector technique's output probabilities on neighbouring streams.
  :func:`hockey_stick_delta` does the same for any tabulated pair of pmfs.
"""

from .empirical import AuditResult, audit_epsilon, clopper_pearson, hockey_stick_delta
from .gaussian import GaussianVerification, gaussian_pld_delta, verify_gaussian
from .svt import SVTPrivacyLoss, svt_output_probabilities, svt_privacy_loss

__all__ = [
    "AuditResult",
    "GaussianVerification",
    "SVTPrivacyLoss",
    "audit_epsilon",
    "clopper_pearson",
    "gaussian_pld_delta",
    "hockey_stick_delta",
    "svt_output_probabilities",
    "svt_privacy_loss",
    "verify_gaussian",
]
