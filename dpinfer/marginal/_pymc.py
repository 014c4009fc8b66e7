"""The observed PyMC variable of marginalised releases: one CustomDist per table of cells."""

from __future__ import annotations

import warnings

import numpy as np

from .._user_code import outside_dpinfer
from ..noise.form import GAUSSIAN, LAPLACE, as_matrix
from ._forms import joined_form, release_form
from ._group_op import group_logp
from ._latent import Latent, SharedLatentWarning
from ._op import STATE, MarginalLogp
from ._quadrature import check_noise, quadrature_logp
from ._totals import draw_given_totals, read_totals


def observe(name: str, latent: Latent, pairs: list[tuple], *, tol: float, dist, totals=None):
    """Add the observed variable ``name`` of ``pairs`` (mechanism, release) given ``latent``.

    ``dist`` is the distribution ``latent`` was read from; its shape must broadcast to
    the cells' shape. ``totals`` is :func:`dpinfer.to_pymc`'s ``(groups, values)``, or None.
    """
    import pymc as pm

    cells = _cells_shape(pairs)
    for i, (mechanism, _) in enumerate(pairs):
        _check_shape(mechanism, cells, f"observed[{i}][1]")
    tensors = _checked_tensors(dist, latent, cells)
    if totals is not None:
        _check_totals_latent(latent)
    forms = [
        release_form(m, r, latent.discrete, f"observed[{i}][1]") for i, (m, r) in enumerate(pairs)
    ]
    if _uses_quadrature(latent):
        check_noise(forms)
    groups = None if totals is None else read_totals(totals, cells, forms)
    # a suppressed cell is held at its cut (the form's number), or PyMC would impute the NaN
    released = [form["released"].reshape(cells) for form in forms]
    discrete = all(mechanism.discrete for mechanism, _ in pairs)
    value = released[0] if len(pairs) == 1 else np.stack(released, axis=-1)
    core = "" if len(pairs) == 1 else str(len(pairs))

    def logp(value, *params):
        return _latent_logp(latent, params, forms, cells, tol, groups)

    variable = pm.CustomDist(
        name,
        *tensors,
        logp=logp,
        random=_random(latent, [m for m, _ in pairs], cells, groups, tol),
        observed=value.astype(np.int64) if discrete else value,
        dtype="int64" if discrete else "floatX",
        signature=",".join(latent.core_signatures()) + f"->({core})",
    )
    variable.tag.dpinfer_marginal = True
    _warn_if_shared(name, latent, cells)
    variable.tag.dpinfer_latent = (latent, cells)
    return variable


def _warn_if_shared(name: str, latent: Latent, cells: tuple[int, ...]) -> None:
    """Warn when an earlier marginalised observation of the model has the same latent."""
    import pymc as pm

    for other in pm.modelcontext(None).observed_RVs:
        earlier = getattr(other.tag, "dpinfer_latent", None)
        if earlier is None or earlier[1] != cells or not latent.same_expression(earlier[0]):
            continue
        warnings.warn(
            f"{other.name!r} and {name!r} each sum out the same latent expression over cells "
            f"of shape {cells}: the model then holds two independent confidential values per "
            "cell. If both are releases of the same cells, pass them in one call, "
            f"dp.to_pymc({name!r}, dist, observed=[(mechanism_1, released_1), (mechanism_2, "
            "released_2)]), which sums each cell's value out once. If they are releases of "
            "different cells that share a distribution, this does not apply (silence it with "
            "warnings.simplefilter('ignore', dp.SharedLatentWarning)).",
            SharedLatentWarning,
            stacklevel=outside_dpinfer(),
        )
        return


def _latent_logp(latent: Latent, params, forms, cells, tol, groups=None):
    """Return the per-cell marginal log-likelihood graph of ``latent`` at ``params``."""
    import pytensor.tensor as pt

    own, parts = latent.split(params)
    if latent.kind == "kernel":
        return _kernel_logp(latent.family, own, forms, cells, tol, groups)
    if latent.kind == "normal":
        return _normal_logp(own, forms, cells)
    if latent.kind == "quadrature":
        return quadrature_logp(latent.op, own, forms, cells, tol)
    components = pt.stack(
        [
            _latent_logp(c, p, forms, cells, tol)
            for c, p in zip(latent.components, parts, strict=True)
        ],
        axis=-1,
    )
    log_weights = pt.log(pt.broadcast_to(own[0], (*cells, len(latent.components))))
    return pt.logsumexp(log_weights + components, axis=-1)


def _check_totals_latent(latent: Latent) -> None:
    if not latent.discrete:
        raise ValueError(
            "exact totals are sums of integer counts, and the latent distribution given is "
            "continuous: model the cells' counts with a discrete distribution (Poisson, "
            "NegativeBinomial, Binomial, ...), e.g. pm.Poisson.dist(mu=...)"
        )
    if latent.kind != "kernel":
        raise ValueError(
            "exact totals need a latent distribution of one family (Poisson, Binomial, "
            "NegativeBinomial, Geometric, DiscreteUniform, DiracDelta), not a mixture: write "
            "the model with one of them, or pass the totals' cells without totals"
        )


def _checked_tensors(dist, latent: Latent, cells: tuple[int, ...]) -> list:
    """Return the latent's parameter tensors, each checked to broadcast to ``cells``.

    ``dist``'s own shape (its ``size``, which the cells replace) is checked too:
    at build time where it is known, else when the model runs.
    """
    from pytensor.graph.basic import Constant
    from pytensor.tensor.random.op import RandomVariable

    from .._tensor_shapes import batch_shape, checked, refuse_known

    about = "the released cells' shape"
    kind = type(dist.owner.op).__name__.removesuffix("RV")
    refuse_known(dist.type.shape, name=f"dist ({kind})", target=cells, about=about, exact=False)
    tensors = []
    for tensor, core in zip(latent.tensors(), latent.core_signatures(), strict=True):
        batch = batch_shape(tensor, core_ndim=int(core != "()"))
        label = f"a parameter of dist ({kind})"
        tensors.append(checked(tensor, batch, name=label, target=cells, about=about, exact=False))
    op = dist.owner.op
    size = op.size_param(dist.owner) if isinstance(op, RandomVariable) else None
    if size is not None and not isinstance(size, Constant) and size.type.ndim == 1:
        label = f"dist ({kind}) size"
        tensors[0] = checked(tensors[0], size, name=label, target=cells, about=about, exact=False)
    return tensors


def _uses_quadrature(latent: Latent) -> bool:
    return latent.kind == "quadrature" or any(_uses_quadrature(c) for c in latent.components)


def _cells_shape(pairs) -> tuple[int, ...]:
    shapes = {tuple(np.shape(released)) for _, released in pairs}
    if len(shapes) != 1:
        raise ValueError(
            "observed: every release of the cells must have the cells' shape; got shapes "
            f"{sorted(shapes)} for the {len(pairs)} (mechanism, released) pairs"
        )
    return shapes.pop()


def _check_shape(mechanism, cells, name: str) -> None:
    k = len(mechanism.event_shape)
    if len(cells) < k or cells[len(cells) - k :] != mechanism.event_shape:
        raise ValueError(
            f"{name} has shape {cells}, which must end in the mechanism's event_shape "
            f"{mechanism.event_shape}"
        )


def _held(mechanism, released: np.ndarray) -> np.ndarray:
    """Return what PyMC holds of a release: a suppressed cell (NaN) at its cut.

    The cuts are the numbers of the form of a release whose every cell is suppressed.
    """
    suppressed = np.isnan(released)
    if not suppressed.any():
        return released
    shape = mechanism.event_shape
    cuts = mechanism.cell_form(np.full(shape, np.nan))["released"].reshape(shape)
    return np.where(suppressed, cuts, released)


def _kernel_logp(family, params, forms, cells, tol, groups):
    """Each cell's log-likelihood; a group's (with exact totals) held by its first cell."""
    import pytensor.tensor as pt

    a, b = (pt.broadcast_to(pt.cast(p, "float64"), cells).ravel() for p in params)
    if groups is None:
        return _cells_logp(family, a, b, forms, tol).reshape(cells)
    logp = pt.zeros(a.shape)
    free = groups.free
    if free.size:
        free_forms = [form[free] for form in forms]
        logp = pt.set_subtensor(logp[free], _cells_logp(family, a[free], b[free], free_forms, tol))
    logp = pt.set_subtensor(logp[groups.firsts], group_logp(family, a, b, forms, groups, tol))
    return logp.reshape(cells)


def _cells_logp(family, a, b, forms, tol):
    """Each cell's log-likelihood (flat), its count summed out alone."""
    import pytensor
    import pytensor.tensor as pt

    form, table = joined_form(forms)
    # each cell's last mode and constants of its releases: hints that the Op reads and
    # updates in place (any value gives the same sums), one state per observed table
    state = pytensor.shared(np.full((forms[0].size, STATE), np.nan), name="marginal_state")
    op = MarginalLogp(family, tol)
    constants = pt.constant(as_matrix(form)), pt.constant(table)
    # an Op's outputs are a list, which the stubs leave a union
    return op(a, b, *constants, state)[0]  # type: ignore[index]


def _normal_logp(params, forms, cells):
    if len(forms) != 1:
        raise ValueError(
            "a Normal confidential value can be marginalised against one release per cell; "
            "for several, use a discrete latent or combine the Gaussian releases first"
        )
    form = forms[0]
    mu, sigma = params
    y, scale = form["released"].reshape(cells), form["scale"].reshape(cells)
    published = not form["suppressed"].any()
    if published and np.all(form["kind"] == GAUSSIAN):
        return _normal_gaussian(mu, sigma, y, scale**2)
    if published and np.all(form["kind"] == LAPLACE):
        return _normal_laplace(mu, sigma, y, scale)
    raise ValueError(
        "a Normal confidential value needs Gaussian or Laplace noise with every cell published"
    )


def _normal_gaussian(mu, sigma, y, noise_var):
    import pymc as pm
    import pytensor.tensor as pt

    return pm.logp(pm.Normal.dist(mu, pt.sqrt(pt.square(sigma) + noise_var)), y)


def _normal_laplace(mu, sigma, y, b):
    import pytensor.tensor as pt
    from pymc.distributions.dist_math import normal_lcdf

    z = y - mu
    return (
        -np.log(2 * b)
        + pt.square(sigma) / (2 * b**2)
        + pt.logaddexp(
            -z / b + normal_lcdf(0.0, 1.0, z / sigma - sigma / b),
            z / b + normal_lcdf(0.0, 1.0, -z / sigma - sigma / b),
        )
    )


def _random(latent: Latent, mechanisms, cells, groups, tol):
    def random(*params, rng=None, size=None):
        shape = tuple(size) if size is not None else cells
        if groups is None:
            s = latent.sample(params, rng, shape)
        else:
            s = _sample_given_totals(latent, params, rng, shape, cells, groups, tol)
        draws = [_held(m, m.release(s, rng=rng)) for m in mechanisms]
        return draws[0] if len(draws) == 1 else np.stack(draws, axis=-1)

    return random


def _sample_given_totals(latent: Latent, params, rng, shape, cells, groups, tol):
    """Latent counts of ``shape`` (``cells``, after any leading axes) given the totals."""
    if shape[len(shape) - len(cells) :] != cells:
        raise ValueError(f"draws of shape {shape} must end in the cells' shape {cells}")
    a, b = (np.broadcast_to(p, shape).reshape(-1, int(np.prod(cells))) for p in params)
    s = [
        draw_given_totals(latent.family, x, y, groups, tol, rng) for x, y in zip(a, b, strict=True)
    ]
    return np.reshape(s, shape)
