"""Reports, summary files and figures shared by every example.

An example's ``run`` returns a :class:`Result`: a :class:`Report` (one
:class:`Row` per analysis and parameter: the exact posterior, the naive one,
MLEs, references, the prior or the truth, with mean, sd and 5/50/95%
quantiles), the InferenceData to save as ``posterior.nc`` and a function that
draws the figure. :func:`save_run` runs an example into an output folder that
cannot be half-written (:class:`dpinfer.outputs.OutputFolder`): ``posterior.nc``,
``summary.csv``, ``summary.json``, the figure, and ``manifest.json`` last.

Examples
--------
>>> import numpy as np, scipy.stats as st
>>> from dpinfer.example import Report, distribution_rows, draw_rows
>>> rows = draw_rows("sampler", "exact", {"theta": np.arange(101.0)})
>>> rows += distribution_rows("naive", "naive", {"theta": st.norm(50, 2)})
>>> report = Report("A demo", ["theta ~ anything"], rows)
>>> print(report.table())  # doctest: +NORMALIZE_WHITESPACE
A demo
theta ~ anything
<BLANKLINE>
parameter  analysis  role        mean      sd      5%     50%     95%
theta      sampler   exact     50.000  29.300   5.000  50.000  95.000
           naive     naive     50.000   2.000  46.710  50.000  53.290
"""

from __future__ import annotations

import functools
import json
import math
import os
import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..outputs import WAIT_LIMIT, OutputFolder, OutputWriteError
from ..samplers import ProfileWarning
from ._figures import interval_figure
from ._rows import Report, Result, _jsonable

if TYPE_CHECKING:
    from ..results import InferenceData
    from ..samplers import MCEMResult
    from ._spec import Example

__all__ = ["mle_interval_notes", "nuts_note", "save_run", "smc_note"]


def save_run(
    example: Example,
    out_dir: str | os.PathLike,
    options: Mapping,
    *,
    seed: int | None,
    progressbar: bool = True,
    verbose: bool = False,
    wait: bool = False,
    wait_limit: float = WAIT_LIMIT,
    overwrite: bool = False,
    on_start: Callable[[], None] | None = None,
) -> tuple[Result, dict]:
    """Run ``example`` with ``options`` into ``out_dir``; return the result and the manifest.

    The folder is locked before the run starts (a second run into it is
    refused at once), marked incomplete, and sealed by the manifest once every
    file is written (see :mod:`dpinfer.outputs`). The options are checked
    against their documented ranges first (:meth:`Example.run`). The report
    (``summary.csv``, ``summary.json``) is written first; a figure that cannot
    be drawn is recorded in the report's notes, its diagnostics and the
    manifest (``figure_error``) and the run still completes.

    Parameters
    ----------
    example : Example
        The example (its ``run`` is called with ``options``).
    out_dir : str or path
        Output folder.
    options : dict
        Keyword arguments of the example's ``run``.
    seed : int or None
        Root seed of the run, recorded in the manifest; None draws one from OS
        entropy (and records it, so the run can be repeated).
    progressbar, verbose : bool
        Passed to ``run``.
    wait : bool, default False
        Wait for another run writing to ``out_dir`` instead of refusing.
    wait_limit : float, default :data:`dpinfer.outputs.WAIT_LIMIT`
        The seconds to wait at most.
    overwrite : bool, default False
        Write into a folder that holds files dpinfer did not write (see
        :class:`dpinfer.outputs.OutputFolder`).
    on_start : callable, optional
        Called once the folder is locked, before the run starts.

    Returns
    -------
    result : Result
    manifest : dict
    """
    if seed is None:
        # a SeedSequence made without entropy draws an int of 128 bits; its stubs allow any
        seed = int(np.random.SeedSequence().entropy)  # type: ignore[arg-type]
    info = {
        "example": example.name,
        "paper": example.paper,
        "seed": seed,
        "options": _jsonable(dict(options)),
    }
    access: dict[str, Any] = {"wait": wait, "wait_limit": wait_limit, "overwrite": overwrite}
    with OutputFolder(out_dir, info=info, **access) as folder:
        if on_start is not None:
            on_start()
        result = example.run(**options, rng=seed, progressbar=progressbar, verbose=verbose)
        _write_report(folder, example, result.report)
        folder.write("posterior.nc", lambda p: result.posterior.to_netcdf(str(p)))
        for name, idata in result.extra.items():
            folder.write(f"{name}.nc", functools.partial(_to_netcdf, idata))
        name = f"{example.module.rsplit('.', 1)[-1]}.png"
        error = _draw_figure(folder, name, result)
        if error is not None:
            result.report.notes.append(f"figure {name} not drawn: {error}")
            result.report.diagnostics["figure_error"] = error
            folder.info["figure_error"] = error
            _write_report(folder, example, result.report)
        manifest = folder.complete()
    return result, manifest


def _write_report(folder, example, report: Report) -> None:
    folder.write_text("summary.csv", report.csv())
    summary = {"example": example.name, "paper": example.paper, **report.to_dict()}
    folder.write_text("summary.json", json.dumps(summary, indent=2) + "\n")


def _to_netcdf(idata, path) -> None:
    idata.to_netcdf(str(path))


def _draw_figure(folder, name: str, result: Result) -> str | None:
    """Draw the figure into ``folder``; return None, or why it could not be drawn.

    The report is written before the figure and a figure that fails is
    recorded, not fatal: a drawing problem never loses the results. A file that
    the folder refuses (:class:`~dpinfer.outputs.OutputWriteError`) is raised.
    """
    figure = result.figure or functools.partial(interval_figure, report=result.report)
    try:
        folder.write(name, figure)
    except OutputWriteError:
        raise  # the folder refused the file: an error the user must see, not a drawing problem
    except Exception as err:  # any drawing failure is reported, not raised
        return f"{type(err).__name__}: {err}"
    return None


def nuts_note(label: str, idata: InferenceData, key: str) -> tuple[str, dict]:
    """Return a note and diagnostics on a NUTS run: divergences, largest R-hat, smallest ESS.

    Parameters
    ----------
    label : str
        The analysis, at the head of the note.
    idata : arviz.InferenceData
        From :func:`dpinfer.reference.sample_nuts`.
    key : str
        Prefix of the diagnostics' names.

    Returns
    -------
    note : str
    diagnostics : dict
        ``{key}_divergences``, ``{key}_rhat_max``, ``{key}_ess``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpinfer.results import to_inference_data
    >>> from dpinfer.example import nuts_note
    >>> idata = to_inference_data({"x": np.zeros(8)}, attrs={"divergences": 0}, chains=2)
    >>> nuts_note("NUTS", idata, "nuts")[1]["nuts_divergences"]
    0
    """
    attrs = idata.posterior.attrs  # type: ignore[attr-defined]  # ArviZ sets the groups at run time
    numbers = {
        f"{key}_divergences": int(attrs["divergences"]),
        f"{key}_rhat_max": float(attrs["rhat_max"]),
        f"{key}_ess": float(attrs["ess"]),
    }
    note = (
        f"{label}: {numbers[f'{key}_divergences']} divergences, max R-hat "
        f"{numbers[f'{key}_rhat_max']:.3f}, min bulk ESS {numbers[f'{key}_ess']:.0f}"
    )
    return note, numbers


def smc_note(label: str, idata: InferenceData, key: str) -> tuple[str, dict]:
    """Return a note and diagnostics on an SMC run: stages, simulations, last move acceptance.

    The SMC samplers run several chains: the stages are the most any chain took, the
    final move acceptance the lowest of the chains' last stages.

    Parameters
    ----------
    label : str
        The analysis, at the head of the note.
    idata : arviz.InferenceData
        From :func:`dpinfer.smc_abc` or :func:`dpinfer.tolerance_smc_abc`.
    key : str
        Prefix of the diagnostics' names.

    Returns
    -------
    note : str
    diagnostics : dict
        ``{key}_stages``, ``{key}_simulations``, ``{key}_final_acceptance``.
    """
    attrs = idata.posterior.attrs  # type: ignore[attr-defined]  # ArviZ sets the groups at run time
    acceptance = np.ravel(attrs.get("chain_last_acceptance_rate", [math.nan]))
    numbers = {
        f"{key}_stages": int(attrs.get("n_stages", 0)),
        f"{key}_simulations": int(attrs["n_simulations"]),
        f"{key}_final_acceptance": float(np.min(acceptance)) if acceptance.size else math.nan,
    }
    note = (
        f"{label}: {numbers[f'{key}_stages']} stages, {numbers[f'{key}_simulations']:,} "
        f"simulations, final move acceptance {numbers[f'{key}_final_acceptance']:.3f}"
        f" (lowest of {int(attrs.get('chains', 1))} chains)"
    )
    return note, numbers


def mle_interval_notes(
    fit: MCEMResult, *, level: float = 0.95, simulations: int = 100_000, progressbar: bool = False
) -> tuple[list[str], dict]:
    """Return notes and diagnostics with the Wald and profile-likelihood intervals of an MLE.

    ``fit`` is a :class:`dpinfer.MCEMResult`; its profile-likelihood interval
    (:meth:`dpinfer.MCEMResult.profile_interval`, ``simulations`` per pass)
    comes with the Monte Carlo standard errors of its ends. A
    :class:`dpinfer.ProfileWarning` becomes a note.

    Parameters
    ----------
    fit : MCEMResult
    level : float, default 0.95
    simulations : int, default 100_000
    progressbar : bool, default False

    Returns
    -------
    notes : list of str
        One per parameter (entry of a vector parameter), and the warnings.
    diagnostics : dict
        ``mle_wald_interval``, ``mle_profile_interval`` and
        ``mle_profile_interval_mcse``, each ``{label: [lower, upper]}``.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ProfileWarning)
        profile = fit.profile_interval(level, simulations=simulations, progressbar=progressbar)
    wald = fit.wald_interval(level)
    flat = {k: [np.ravel(v) for v in pair] for k, pair in wald.items()}
    prof = {k: [np.ravel(v) for v in pair] for k, pair in profile.items()}
    mcse = {k: [np.ravel(v) for v in pair] for k, pair in profile.monte_carlo_se.items()}
    notes: list[str] = []
    numbers: dict[str, dict] = {"mle_wald_interval": {}, "mle_profile_interval": {}}
    numbers["mle_profile_interval_mcse"] = {}
    for name in wald:
        for i, label in enumerate(_labels(name, flat[name][0])):
            w, pr, se = (tuple(float(v[i]) for v in d[name]) for d in (flat, prof, mcse))
            notes.append(
                f"MLE {level:.0%} intervals for {label}: Wald [{w[0]:.4g}, {w[1]:.4g}], profile "
                f"likelihood [{pr[0]:.4g}, {pr[1]:.4g}] (Monte Carlo s.e. of its ends "
                f"{se[0]:.2g}, {se[1]:.2g})"
            )
            numbers["mle_wald_interval"][label] = list(w)
            numbers["mle_profile_interval"][label] = list(pr)
            numbers["mle_profile_interval_mcse"][label] = list(se)
    for record in caught:
        if issubclass(record.category, ProfileWarning):
            notes.append(str(record.message))
        else:
            warnings.warn_explicit(record.message, record.category, record.filename, record.lineno)
    return notes, numbers


def _labels(name: str, values: np.ndarray) -> list[str]:
    return [name] if values.size == 1 else [f"{name}[{i}]" for i in range(values.size)]
