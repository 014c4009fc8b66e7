"""Trained estimators: a neural posterior ``q(theta | s_dp)`` and likelihood ``q(s_dp | theta)``.

Both keep what they need to be used again on a new release without retraining
and without the objects they were trained with: the parameter names, shapes and
support maps, the release's shape, and a description of the mechanism for the
results' metadata. They save to one file (:meth:`save`) that :func:`load` reads
back with ``torch.load(..., weights_only=True)``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Self

import numpy as np
import torch
from numpy.typing import ArrayLike

from .. import _validate
from .._rng import RNGLike, as_generator, as_seed_sequence, child_sequence
from ..model import as_prior
from . import _batch
from ._batch import _MIN_SUPPORT_RATE, _SAMPLE_BATCH
from ._device import check_device
from ._io import read, save
from ._mcmc import MCMC, Chains, random_walk_metropolis
from ._result import neural_result, total_draws
from ._torch_rng import forked

if TYPE_CHECKING:
    from .._parameter_space import ParameterSpace
    from ..model import PriorLike
    from ..results import InferenceData
    from ._flows import ConditionalDensity

__all__ = ["NeuralLikelihood", "NeuralPosterior", "load"]


class _Estimator:
    """A trained :class:`~dpinfer.neural._flows.ConditionalDensity` and its problem."""

    kind = ""
    method = ""  # the sampler that trains it, named in the results' attrs

    def __init__(
        self,
        density: ConditionalDensity,
        space: ParameterSpace,
        info: dict,
        flow_spec: dict | None,
        embedding_spec: dict | None = None,
    ) -> None:
        self.density = density
        self.space = space
        self.info = info
        self.flow_spec = flow_spec
        self.embedding_spec = embedding_spec

    @property
    def names(self) -> list[str]:
        """Parameter names."""
        return list(self.space.names)

    @property
    def event_shape(self) -> tuple[int, ...]:
        """Shape of one release."""
        return tuple(self.info["event_shape"])

    @property
    def device(self) -> torch.device:
        """The torch device the estimator evaluates and samples on."""
        return self.density.device

    def to(self, device: str | torch.device) -> Self:
        """Move the estimator to ``device`` ("cpu", "cuda", "cuda:<index>"); return it.

        Sampling and density evaluations then run there (CUDA: untested here).
        """
        self.density.to(check_device(device))
        return self

    def save(self, path: str | os.PathLike) -> None:
        """Save the estimator to ``path`` (read back with :func:`dpinfer.neural.load`).

        The file holds the weights, the standardisations, the flow's settings,
        the problem's description and a SHA-256 digest of all of them.
        """
        save(self, path)

    def _tensor(self, x) -> torch.Tensor:
        return torch.as_tensor(np.asarray(x), dtype=torch.float32, device=self.device)

    def _released(self, released) -> np.ndarray:
        arr = _validate.finite_array("released", released)
        if arr.shape != self.event_shape:
            raise ValueError(
                f"released must have shape {self.event_shape} (the release the estimator "
                f"was trained on), got shape {arr.shape}"
            )
        if self.info["discrete"]:
            arr = _validate.integer_array("released", arr).astype(float)
        return arr.reshape(-1)

    def _releases(self, released) -> tuple[np.ndarray, bool]:
        """Return one release as ``(k,)`` or a batch as ``(m, k)``, and whether it is a batch."""
        shape = np.shape(released)
        if shape == self.event_shape:
            return self._released(released), False
        if (
            len(shape) != len(self.event_shape) + 1
            or shape[1:] != self.event_shape
            or not shape[0]
        ):
            raise ValueError(
                f"released must have shape {self.event_shape} (one release, the shape the "
                f"estimator was trained on) or (m, *{self.event_shape}) (a batch of m >= 1 "
                f"releases), got shape {shape}"
            )
        arr = _validate.finite_array("released", released)
        if self.info["discrete"]:
            arr = _validate.integer_array("released", arr).astype(float)
        return arr.reshape(shape[0], -1), True

    def _params(self, params) -> np.ndarray:
        """Unconstrained ``z`` of a dict of parameter arrays with a leading batch axis."""
        if not isinstance(params, dict) or set(params) != set(self.names):
            raise ValueError(f"params must be a dict with keys {self.names}, got {params!r:.200}")
        arrays = {k: _validate.finite_array(f"params[{k!r}]", params[k]) for k in self.names}
        shapes = {k: v.shape for k, v in arrays.items()}
        batch = {v[:1] for v in shapes.values()}
        expected = {k: self.space.shapes[k] for k in self.names}
        if len(batch) != 1 or () in batch or any(shapes[k][1:] != expected[k] for k in self.names):
            raise ValueError(
                "params must hold one array per parameter with a common leading batch axis "
                f"and the parameter's shape after it {expected}, got shapes {shapes}"
            )
        return self.space.batch_to_unconstrained(arrays)

    def _draws_result(self, params, released, root, chains, stats, *, batch=False, **attrs):
        """Build the InferenceData of draws given ``released`` (with ``batch``, each release)."""
        shape = (len(released), *self.event_shape) if batch else self.event_shape
        return neural_result(
            params,
            info=self.info,
            released=released.reshape(shape),
            method=self.method,
            root=root,
            chains=chains,
            sample_stats=stats,
            batch=batch,
            **attrs,
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(params={self.names}, event_shape={self.event_shape}, "
            f"mechanism={self.info['mechanism']})"
        )


class NeuralPosterior(_Estimator):
    """A neural posterior estimate ``q(theta | s_dp)``, as trained by :func:`sppe`.

    Attributes
    ----------
    density : torch.nn.Module
        The conditional flow of the unconstrained parameters given a release,
        with its standardisations.
    names : list of str
        Parameter names.

    Notes
    -----
    After SPPE's first round the estimate is amortised: trained on the prior
    predictive, it applies to any release. Later rounds train on parameters
    proposed near the observed release, so the estimate is accurate there only.
    """

    kind = "posterior"
    method = "sppe"

    def log_prob(self, params: dict, released: ArrayLike) -> np.ndarray:
        """``log q(theta | released)`` of a batch of parameters (on their own scale).

        Parameters
        ----------
        params : dict
            Parameter arrays with a leading batch axis.
        released : array_like
            One release.

        Returns
        -------
        numpy.ndarray
            Log densities, shape ``(n,)``.
        """
        z = self._params(params)
        _, log_jac = self.space.batch_from_unconstrained(z)
        context = self._tensor(self._released(released))
        with torch.no_grad():
            log_q = self.density.log_prob(self._tensor(z), context).double().cpu().numpy()
        return log_q - log_jac

    def sample(
        self,
        released: ArrayLike,
        *,
        draws: int = 4000,
        chains: int = 4,
        prior: PriorLike | Mapping[str, Any] | None = None,
        rng: RNGLike = None,
    ) -> InferenceData:
        """Draw from the posterior estimate given a (new) release, without retraining.

        Parameters
        ----------
        released : array_like
            The release, or a batch of releases ``(m, *event_shape)``: then every
            release's posterior is drawn in one call (see Notes).
        draws : int, default 4000
            Draws over all chains together (rounded up to a multiple of ``chains``),
            per release.
        chains : int, default 4
            Independent draws are split into this many chains.
        prior : Prior or dict, optional
            Restrict the draws to its support (the estimate already respects
            the bounds of scalar ``scipy.stats`` priors).
        rng : seed, optional

        Returns
        -------
        arviz.InferenceData
            ``posterior`` and, in ``sample_stats``, ``log_q`` (the estimate's
            log density at each draw). For a batch, every variable has a
            ``release`` dimension after ``chain`` and ``draw``, and ``attrs``
            carry ``ess_release`` and ``rhat_release`` per release.

        Notes
        -----
        A batch runs the flow on all releases at once (in chunks of at most
        100,000 draws): ``benchmarks/sbc_neural.py`` measures it against one
        call per release. The estimate is amortised only if trained on the
        prior predictive (SPPE's first round, or ``rounds=1``); later rounds
        make it accurate near the release it was trained for.

        Examples
        --------
        >>> import numpy as np, scipy.stats as st, dpinfer as dp
        >>> from dpinfer.neural import SplineFlow, Training, sppe
        >>> def simulate(p, rng):
        ...     return p["theta"] + rng.standard_normal(len(p["theta"]))
        >>> model = dp.Model(prior={"theta": st.norm(0, 1)}, simulate=simulate)
        >>> _, post = sppe(model, dp.Laplace(0.5), 0.3, rounds=1, simulations=200,
        ...                flow=SplineFlow(transforms=1, hidden_features=8),
        ...                training=Training(max_epochs=2), rng=1, progressbar=False)
        >>> idata = post.sample(np.array([-1.0, 0.0, 2.5]), draws=40, rng=2)
        >>> idata.posterior["theta"].dims, idata.posterior["theta"].shape
        (('chain', 'draw', 'release'), (4, 10, 3))
        """
        released, batch = self._releases(released)
        chains, n = total_draws(draws, chains)
        prior = None if prior is None else as_prior(prior)
        root = as_seed_sequence(rng)
        if batch:
            return _batch.sample_batch(self, released, n, chains, prior, root)
        _, params, log_q, rate = self.draw(released, n, child_sequence(root, 0), prior)
        return self._draws_result(
            params, released, root, chains, {"log_q": log_q}, support_rate=rate
        )

    def draw(
        self,
        released: np.ndarray,
        n: int,
        seq: np.random.SeedSequence,
        prior: PriorLike | None = None,
    ) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray, float]:
        """Draw ``n`` times in the prior support; return ``z``, params, ``log q``, acceptance."""
        context = self._tensor(released)
        kept: list[np.ndarray] = []
        log_q: list[np.ndarray] = []
        tried = 0
        with forked(seq, self.device), torch.no_grad():
            while sum(len(k) for k in kept) < n:
                want = n - sum(len(k) for k in kept)
                sample = self.density.sample(context, min(_SAMPLE_BATCH, 2 * want + 100))
                log_z = self.density.log_prob(sample, context).double().cpu().numpy()
                z = sample.double().cpu().numpy()
                tried += len(z)
                ok = np.all(np.isfinite(z), axis=1) & np.isfinite(log_z)
                if prior is not None:
                    params, log_jac = self.space.batch_from_unconstrained(z[ok])
                    ok[ok] = np.isfinite(np.asarray(prior.logpdf(params), dtype=float))
                kept.append(z[ok])
                log_q.append(log_z[ok])
                accepted = sum(len(k) for k in kept)
                if tried >= 10 * _SAMPLE_BATCH and accepted < _MIN_SUPPORT_RATE * tried:
                    raise RuntimeError(
                        f"the posterior estimate puts {accepted / tried:.2g} of its mass in the "
                        "prior support; train longer or check the model"
                    )
        z = np.concatenate(kept)[:n]
        params, log_jac = self.space.batch_from_unconstrained(z)
        return z, params, np.concatenate(log_q)[:n] - log_jac, accepted / tried


class NeuralLikelihood(_Estimator):
    """A neural likelihood estimate ``q(s_dp | theta)``, as trained by :func:`sple`.

    Notes
    -----
    For an integer-valued release the flow models ``s_dp + U(0, 1)``
    (dequantisation): its density is then a piecewise-constant estimate of the
    pmf on each cell, and :meth:`log_prob` evaluates it at the cell centre
    ``s_dp + 1/2``. The estimate is trained on all rounds' simulations; it is
    accurate where those parameters lie, which after several rounds is near the
    posterior of the observed release.
    """

    kind = "likelihood"
    method = "sple"

    def log_prob(self, released: ArrayLike, params: dict) -> np.ndarray:
        """``log q(released | theta)`` for a batch of parameters.

        Parameters
        ----------
        released : array_like
            One release.
        params : dict
            Parameter arrays with a leading batch axis.

        Returns
        -------
        numpy.ndarray
            Log likelihood estimates, shape ``(n,)``.
        """
        return self._log_lik(self._released(released), self._params(params))

    def _log_lik(self, released: np.ndarray, z: np.ndarray) -> np.ndarray:
        """``log q`` of one release ``(k,)``, or of one release per row ``(n, k)``, at ``z``."""
        x = self._tensor(released + (0.5 if self.info["dequantised"] else 0.0))
        out = np.empty(len(z))
        with torch.no_grad():
            for lo in range(0, len(z), _SAMPLE_BATCH):
                chunk = self._tensor(z[lo : lo + _SAMPLE_BATCH])
                rows = x if x.ndim == 1 else x[lo : lo + len(chunk)]
                out[lo : lo + len(chunk)] = (
                    self.density.log_prob(rows, chunk).double().cpu().numpy()
                )
        return out

    def posterior(
        self,
        released: ArrayLike,
        prior: PriorLike | Mapping[str, Any],
        *,
        draws: int = 4000,
        chains: int = 4,
        mcmc: MCMC | None = None,
        rng: RNGLike = None,
    ) -> InferenceData:
        """Sample ``pi(theta) q(released | theta)`` by random-walk Metropolis, without retraining.

        Parameters
        ----------
        released : array_like
            The release, or a batch of releases ``(m, *event_shape)``: then the
            chains of all releases run together, each release's with its own
            adapted proposal, and one InferenceData with a ``release`` dimension
            is returned (as for :meth:`NeuralPosterior.sample`).
        prior : Prior or dict
            The prior (a :class:`dpinfer.Prior`, or ``model.prior``).
        draws : int, default 4000
            Kept draws over all chains together (rounded up to a multiple of
            ``chains``), per release.
        chains : int, default 4
            Independent Markov chains.
        mcmc : MCMC, optional
            Warm-up and thinning (default :class:`MCMC`).
        rng : seed, optional

        Returns
        -------
        arviz.InferenceData
            ``posterior``; ``sample_stats``: ``log_likelihood_estimate`` and
            ``lp`` (log prior plus log likelihood estimate) per draw; ``attrs``:
            ``rhat_max`` and ``mcmc_acceptance_rate``.
        """
        released, batch = self._releases(released)
        chains, n = total_draws(draws, chains)
        mcmc = _check_mcmc(mcmc)
        prior = as_prior(prior)
        root = as_seed_sequence(rng)
        if batch:
            return _batch.posterior_batch(self, released, prior, chains, n, mcmc, root)
        run = self.chains(released, prior, chains, n // chains, mcmc, child_sequence(root, 0))
        params, stats = self.chain_draws(released, run)
        rate = run.acceptance_rate
        return self._draws_result(params, released, root, chains, stats, mcmc_acceptance_rate=rate)

    def log_target(
        self, released: np.ndarray, prior: PriorLike
    ) -> Callable[[np.ndarray], np.ndarray]:
        """``z -> log pi(theta(z)) + log |J| + log q(released | theta(z))``.

        ``released`` is one release ``(k,)``, or one per row of ``z`` ``(n, k)``.
        """

        def target(z):
            params, log_jac = self.space.batch_from_unconstrained(z)
            lp = np.asarray(prior.logpdf(params), dtype=float) + log_jac
            ok = np.isfinite(lp)
            out = np.full(len(z), -np.inf)
            if ok.any():
                rows = released if released.ndim == 1 else released[ok]
                out[ok] = lp[ok] + self._log_lik(rows, z[ok])
            out[~np.isfinite(out)] = -np.inf
            return out

        return target

    def chains(
        self,
        released: np.ndarray,
        prior: PriorLike,
        n_chains: int,
        per_chain: int,
        mcmc: MCMC,
        seq: np.random.SeedSequence,
    ) -> Chains:
        """Run ``n_chains`` chains from resampled prior draws; keep ``per_chain`` draws each."""
        gen = as_generator(seq)
        candidates = self.space.batch_to_unconstrained(prior.sample(mcmc.initial_candidates, gen))
        log_w = self._log_lik(released, candidates)
        log_w[~np.isfinite(log_w)] = -np.inf
        if not np.isfinite(log_w).any():
            raise RuntimeError("the likelihood estimate is zero at every initial candidate")
        w = np.exp(log_w - log_w.max())
        w /= w.sum()
        start = candidates[gen.choice(len(candidates), size=n_chains, p=w)]
        mean = w @ candidates
        cov = ((candidates - mean) * w[:, None]).T @ (candidates - mean)
        target = self.log_target(released, prior)
        return random_walk_metropolis(target, start, cov, per_chain, mcmc, gen)

    def chain_draws(self, released: np.ndarray, run: Chains) -> tuple[dict, dict]:
        """Parameters of the kept states (chain-major) and their per-draw statistics."""
        z = run.z.reshape(-1, run.z.shape[-1])
        params, _ = self.space.batch_from_unconstrained(z)
        stats = {
            "log_likelihood_estimate": self._log_lik(released, z),
            "lp": run.log_target.reshape(-1),
        }
        return params, stats


def _check_mcmc(mcmc) -> MCMC:
    if mcmc is None:
        return MCMC()
    if not isinstance(mcmc, MCMC):
        raise TypeError(f"mcmc must be a dpinfer.neural.MCMC, got {type(mcmc).__name__}")
    return mcmc


def load(
    path: str | os.PathLike,
    *,
    flow: Callable | None = None,
    embedding: Callable | torch.nn.Module | None = None,
    device: str | torch.device = "cpu",
    verify: bool = True,
) -> NeuralPosterior | NeuralLikelihood:
    """Load an estimator saved with ``estimator.save(path)``, checking what it reads.

    Parameters
    ----------
    path : str or path-like
        The file.
    flow : callable, optional
        The flow builder it was trained with; needed only when that was not a
        :class:`SplineFlow` (whose settings are saved with the weights).
    embedding : callable or torch.nn.Module, optional
        The embedding network it was trained with; needed only when that was a
        custom one (a preset's settings are saved with the weights).
    device : str or torch.device, default "cpu"
        Where to load it ("cpu", "cuda", "cuda:<index>"; CUDA untested here).
    verify : bool, default True
        Check the file's SHA-256 digest: a file changed after it was saved is
        refused. ``False`` loads a file saved without one (by dpinfer 0.1's
        first format) or edited on purpose; every other check still applies.

    Returns
    -------
    NeuralPosterior or NeuralLikelihood

    Raises
    ------
    ValueError
        If the file is not a valid saved estimator: it holds objects other
        than tensors, numbers and strings (torch refuses to unpickle them), its
        description lacks a key or has one of the wrong type, its sizes do not
        agree (the flow against the parameters and the release), its digest
        does not match its contents, or its weights do not fit the flow, are
        not finite, or have standardisation scales that are not positive.

    Notes
    -----
    The file is read with ``torch.load(..., weights_only=True)``: it holds
    tensors, numbers and strings only, so loading runs no pickled code. The
    digest detects changes made after saving; it is not a signature (whoever
    can write the file can write a matching digest), so load files you trust.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from dpinfer.neural import load
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "not-an-estimator.pt"
    >>> _ = path.write_bytes(b"plain bytes")
    >>> load(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: ... is not a valid saved dpinfer.neural estimator: torch.load(... refused it ...
    """
    verify = _validate.flag("verify", verify)
    kind, parts = read(path, flow, embedding, check_device(device), verify=verify)
    kinds: dict[str, type[NeuralPosterior] | type[NeuralLikelihood]] = {
        "posterior": NeuralPosterior,
        "likelihood": NeuralLikelihood,
    }
    return kinds[kind](*parts)
