"""The observed PyMC variable of marginalised releases: one CustomDist per table of cells."""

from __future__ import annotations

import warnings

import numpy as np

from .._user_code import outside_dpinfer
from ..noise.form import GAUSSIAN, LAPLACE, as_matrix
from . import _numba_op  # noqa: F401  (registers the compiled implementations)
from ._families import LatentFamily
from ._forms import joined_form, release_form, release_views
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
    # joined once: every graph of the model's log-density holds this form, and each
    # release's form is a view of it
    inputs = _KernelInputs(forms)
    forms = inputs.forms()
    # a suppressed cell is held at its cut (the form's number), or PyMC would impute the NaN
    released = [form["released"].reshape(cells) for form in forms]
    discrete = all(mechanism.discrete for mechanism, _ in pairs)
    value = released[0] if len(pairs) == 1 else np.stack(released, axis=-1)
    core = "" if len(pairs) == 1 else str(len(pairs))

    def logp(value, *params):
        return _latent_logp(latent, params, forms, cells, tol, inputs, groups)

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


def _latent_logp(latent: Latent, params, forms, cells, tol, inputs: _KernelInputs, groups=None):
    """Return the per-cell marginal log-likelihood graph of ``latent`` at ``params``."""
    import pytensor.tensor as pt

    own, parts = latent.split(params)
    if latent.kind == "kernel":
        return _kernel_logp(latent, own, forms, cells, tol, inputs, groups)
    if latent.kind == "normal":
        return _normal_logp(own, forms, cells)
    if latent.kind == "quadrature":
        return quadrature_logp(latent.op, own, forms, cells, tol)
    components = pt.stack(
        [
            _latent_logp(c, p, forms, cells, tol, inputs)
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


class _KernelInputs:
    """The joined form of a table's releases and the Op's other inputs, made once.

    PyMC builds the model's log-density graph anew for every function it
    compiles; each graph reads the same form and tables (one constant each) and
    the same per-cell state of each latent, so that compiling more functions
    adds no per-cell memory. The state is a hint the Op reads and updates in
    place (any value gives the same sums), one per latent kernel of the table.
    ``forms`` are the releases' forms, given up: one is joined in place.
    """

    def __init__(self, forms: list[np.ndarray]):
        self.form, self.table = joined_form(forms, copy=False)
        self.releases = len(forms)
        self._constants: tuple | None = None
        self._states: dict[int, object] = {}
        self._subsets: dict[bytes, _KernelInputs] = {}

    def forms(self) -> list[np.ndarray]:
        """Return the releases' forms: views of the joined one."""
        return release_views(self.form, self.releases)

    def at_cells(self, cells: np.ndarray) -> _KernelInputs:
        """Return the inputs of the cells at flat indices ``cells`` (made once)."""
        key = np.asarray(cells).tobytes()
        if key not in self._subsets:
            self._subsets[key] = _KernelInputs([form[cells] for form in self.forms()])
        return self._subsets[key]

    def constants(self) -> tuple:
        """Return the form (as a float64 matrix) and its log-CDF tables as graph constants."""
        import pytensor.tensor as pt

        if self._constants is None:
            self._constants = pt.constant(as_matrix(self.form)), pt.constant(self.table)
        return self._constants

    def state(self, latent: Latent):
        """Return the shared per-cell state of ``latent``'s kernel: all NaN (no hint) at first."""
        import pytensor

        key = id(latent)
        if key not in self._states:
            start = np.full((self.form.size // self.releases, STATE), np.nan)
            self._states[key] = pytensor.shared(start, name="marginal_state", borrow=True)
        return self._states[key]


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


def _kernel_logp(latent: Latent, params, forms, cells, tol, inputs: _KernelInputs, groups):
    """Each cell's log-likelihood; a group's (with exact totals) held by its first cell."""
    import pytensor.tensor as pt

    family = latent.family
    if family is None:  # a kernel latent always has its family
        raise TypeError(f"a {latent.kind} latent has no kernel family")
    a, b = (pt.broadcast_to(pt.cast(p, "float64"), cells).ravel() for p in params)
    if groups is None:
        return _cells_logp(family, a, b, inputs, inputs.state(latent), tol).reshape(cells)
    logp = pt.zeros(a.shape)
    free = groups.free
    if free.size:
        subset = inputs.at_cells(free)
        cells_logp = _cells_logp(family, a[free], b[free], subset, subset.state(latent), tol)
        logp = pt.set_subtensor(logp[free], cells_logp)
    logp = pt.set_subtensor(logp[groups.firsts], group_logp(family, a, b, forms, groups, tol))
    return logp.reshape(cells)


def _cells_logp(family: LatentFamily, a, b, inputs: _KernelInputs, state, tol):
    """Each cell's log-likelihood (flat), its count summed out alone."""
    op = MarginalLogp(family, tol)
    # an Op's outputs are a list, which the stubs leave a union
    return op(a, b, *inputs.constants(), state)[0]  # type: ignore[index]


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
