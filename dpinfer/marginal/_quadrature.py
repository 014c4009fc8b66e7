r"""Continuous latent values other than the Normal: the integral by piecewise Gauss-Legendre.

For a cell released as :math:`y` with Gaussian or Laplace noise :math:`\eta`, and a
continuous latent density :math:`p(s \mid \theta)`,

.. math:: \log p(y \mid \theta) = \log \int p(s \mid \theta)\, \eta(y \mid s)\, ds

is computed per cell on the latent's support, cut into pieces at the latent's
quantiles :math:`\tau, 10^{-9}, \dots, 10^{-1}, 1/4, 1/2` and their complements
(``tau = tol``), and at :math:`y + k\,c\,a` for
:math:`k \in \{0, \pm 2/23, \pm 1/4, \pm 1/2, \pm 1\}`, where the noise's tail beyond
:math:`c\,a` holds less than ``tol`` of its mass (``a`` its scale). Each piece gets
:data:`NODES` Gauss-Legendre nodes: in :math:`\log s` where the piece is positive and
spans more than a factor 2 (a density with a power-law singularity at 0, a Gamma of
shape below 1, is smooth there), in :math:`s` elsewhere. The pieces follow both
factors, so a latent much narrower than the noise and a noise much narrower than the
latent are both resolved, the Laplace density's kink at ``y`` falls on a piece
boundary, and a release far in the latent's tail keeps the range between them.

The gradient is the same quadrature applied to the gradient of the latent's
log-density: the breakpoints are held fixed (moving them changes the integral only
through the negligible integrand at the outer ones, and PyMC's inverse CDFs, the
Gamma's among them, have no gradient in their shape).

The error: the latent's mass beyond its ``tol`` quantiles and the noise's beyond
:math:`c\,a` are neglected where they do not overlap the range; within it, the error
measured in ``tests/marginal/test_quadrature.py`` (Gamma of shapes 0.5 and 400,
LogNormal, Beta, StudentT; Gaussian and Laplace noise of scales 1e-3 to 1e3; releases
from the latent's 1% quantile to 5 noise scales beyond its median) is at most
``1.2e-10`` in the log-likelihood, and below ``2e-7`` for the Exponential, Weibull,
InverseGamma, Logistic and Gumbel families checked outside the suite. Far from the
release the pieces are coarse and the value is approximate, but finite and rising
towards the release, which is what a sampler's warm-up needs.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..noise.form import GAUSSIAN, LAPLACE, NO_TABLE
from ..noise.terms import log_terms
from ._forms import packed, unpacked

#: Gauss-Legendre nodes per piece
NODES = 16
_DECADES = 10.0 ** -np.arange(9, 0, -1)
_QUANTILES = np.concatenate([_DECADES, [0.25, 0.5, 0.75], 1 - _DECADES[::-1]])
_MEDIAN = 1 + len(_DECADES) + 1  # the index of 1/2 among [tol, *_QUANTILES, 1 - tol]
_HALVES = np.array([2.0 / 23, 0.25, 0.5, 1.0])
_NOISE_STEPS = np.concatenate([-_HALVES[::-1], [0.0], _HALVES])
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(NODES)


def has_quantile_function(op, params) -> bool:
    """Whether PyMC has the inverse CDF of the distribution ``op`` (needed for its range)."""
    import pymc as pm
    from pytensor.tensor.random.op import RandomVariable

    if not isinstance(op, RandomVariable):
        return False
    try:
        pm.icdf(op(*params), np.array([0.5]))
    except NotImplementedError:
        return False
    return True


def noise_reach(kind: int, tol: float) -> float:
    """Multiple of the noise scale beyond which each tail holds less than ``tol / 2``."""
    if kind == LAPLACE:
        return math.log(1 / tol)
    # Gaussian: Mills' bound P(Z > c) < phi(c) / c
    c = math.sqrt(2 * math.log(1 / tol))
    while math.exp(-c * c / 2) / (c * math.sqrt(2 * math.pi)) > tol / 2:
        c += 0.1
    return c


def check_noise(forms) -> None:
    """Refuse releases the quadrature has no density for (suppressed cells, other noise)."""
    kinds = {int(kind) for form in forms for kind in np.unique(form["kind"])}
    if any(form["suppressed"].any() for form in forms) or not kinds <= {GAUSSIAN, LAPLACE}:
        raise ValueError(
            "a continuous confidential value other than the Normal can be marginalised against "
            "Gaussian or Laplace noise with every cell published"
        )


def quadrature_logp(op, params, forms, cells, tol):
    """Return the per-cell log of the latent integrated against every release's density."""
    import pymc as pm
    import pytensor.tensor as pt

    cols = [pt.broadcast_to(pt.cast(p, "float64"), cells).ravel()[:, None] for p in params]
    latent = op(*cols)
    # where a piece ends does not change the integral: the inverse CDF (PyMC's Gamma's has
    # no gradient in its shape) sees parameters the gradient does not pass through
    fixed = op(*(held_fixed(c) for c in cols))
    tails = np.array([tol, *_QUANTILES, 1 - tol])
    points = [pm.icdf(fixed, tails[None, :])]
    for form in forms:
        y, scale = form["released"][:, None], form["scale"][:, None]
        gaussian = form["kind"][:, None] == GAUSSIAN
        reach = np.where(gaussian, noise_reach(GAUSSIAN, tol), noise_reach(LAPLACE, tol))
        # breakpoints at y and y +- (2/23, 1/4, 1/2, 1) of the reach: the noise's own pieces
        # are then exact to ~1e-15 with 16 nodes
        points.append(pt.constant(y + reach * scale * _NOISE_STEPS))
    support = pm.icdf(fixed, np.array([[0.0, 1.0]]))
    lo, hi = support[:, :1], support[:, 1:]
    # the gradient is the quadrature of the integrand's gradient at fixed nodes
    breaks = held_fixed(pt.sort(pt.clip(pt.concatenate(points, axis=1), lo, hi), axis=1))
    left, right = breaks[:, :-1, None], breaks[:, 1:, None]
    median = held_fixed(points[0][:, None, _MEDIAN : _MEDIAN + 1])
    nodes, log_w = _pieces(left, right, median=median)
    flat = nodes.reshape((nodes.shape[0], -1))
    # the nodes are held fixed, so the noise's terms are constants of the gradient
    log_f = pm.logp(latent, flat) + sum(noise_terms(form, flat) for form in forms)
    terms = log_w.reshape(flat.shape) + log_f
    return pt.logsumexp(terms, axis=1).reshape(cells)


def held_fixed(x):
    """Return ``x`` as a value the gradient does not pass through.

    PyTensor's ``disconnected_grad`` is a view that PyMC's rewrites remove before
    differentiating; this Op stays.
    """
    return _held_fixed_op()(x)


@functools.cache
def _held_fixed_op():
    from pytensor.gradient import disconnected_type
    from pytensor.graph.basic import Apply
    from pytensor.graph.op import Op
    from pytensor.tensor import as_tensor_variable

    class HeldFixed(Op):
        __props__ = ()

        # PyTensor's Ops name their inputs (the base class takes *inputs)
        def make_node(self, x):  # type: ignore[override]
            x = as_tensor_variable(x)
            return Apply(self, [x], [x.type()])

        def perform(self, node, inputs, outputs):
            outputs[0][0] = inputs[0].copy()

        def infer_shape(self, fgraph, node, shapes):
            return shapes

        def connection_pattern(self, node):
            return [[False]]

        def grad(self, inputs, output_grads):
            return [disconnected_type()]

    return HeldFixed()


def _pieces(left, right, *, median):
    """Gauss-Legendre nodes and log-weights of each piece ``[left, right]``.

    A positive piece spanning more than a factor 2 is integrated in ``log s``, where a
    power-law density near 0 (``s^(k-1)``, a Gamma or Weibull of shape ``k < 1``) is
    smooth; the others in ``s``.
    """
    import pytensor.tensor as pt

    in_log = (left > 0) & (right > 2 * left)
    # the unused branch gets harmless numbers, so that its gradient is 0, not 0 * inf
    lo, hi = pt.switch(in_log, left, 1.0), pt.switch(in_log, right, 2.0)
    span = pt.log(hi / lo)
    log_nodes = lo * pt.exp((1 + _NODES) / 2 * span)
    log_w_log = np.log(_WEIGHTS) + pt.log(span / 2) + pt.log(log_nodes)
    half = (right - left) / 2
    # an empty piece (two breakpoints clipped together) weighs exp(-690), not 0: log 0
    # would make its gradient 0 * inf
    log_w_linear = pt.log(pt.maximum(half, 1e-300)) + np.log(_WEIGHTS)
    nodes = pt.switch(in_log, log_nodes, left + half * (1 + _NODES))
    # an empty piece may sit on the support's edge, where the density is 0: its nodes
    # move to the median, where the latent's log-density and its gradient are finite
    nodes = pt.switch(half > 0, nodes, median)
    return nodes, pt.switch(in_log, log_w_log, log_w_linear)


def noise_terms(form: np.ndarray, s):
    """Return ``log eta_i(y_i | s[i, k])``, row ``i`` a cell, as a PyTensor expression.

    The compiled :func:`dpinfer.noise.terms.log_terms` of the release's form at
    values ``s`` that the gradient does not pass through (the quadrature's
    nodes, held fixed). The Op holds the form grouped, as the marginal Op does
    (:func:`dpinfer.marginal._forms.packed`), so that the compiled terms are those
    the marginal sums use.
    """
    return _noise_terms_op()(s, *packed(form, NO_TABLE))


def _values(s: np.ndarray) -> np.ndarray:
    """``s`` as the compiled terms take it: a writable C-contiguous float64 array."""
    return np.require(s, dtype=np.float64, requirements=["C", "W"])


@functools.cache
def _noise_terms_op():
    from pytensor.gradient import grad_not_implemented
    from pytensor.graph.basic import Apply
    from pytensor.graph.op import Op
    from pytensor.tensor import as_tensor_variable

    class NoiseTerms(Op):
        __props__ = ()

        # PyTensor's Ops name their inputs (the base class takes *inputs)
        def make_node(self, s, form, table):  # type: ignore[override]
            s = as_tensor_variable(s).astype("float64")
            constants = [as_tensor_variable(x) for x in (form, table)]
            return Apply(self, [s, *constants], [s.type()])

        def perform(self, node, inputs, outputs):
            s, form, table = inputs
            outputs[0][0] = log_terms(*unpacked(form, table), _values(s))

        def infer_shape(self, fgraph, node, shapes):
            return [shapes[0]]

        def grad(self, inputs, output_grads):
            note = "the noise's terms at nodes held fixed"
            return [grad_not_implemented(self, i, x, note) for i, x in enumerate(inputs)]

    return NoiseTerms()
