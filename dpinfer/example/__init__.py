"""What every published example shares: its description, its report and its run.

An example (one module or package in :mod:`dpinfer.models`, or a user's own)
holds the data, the model, the mechanism and the references of one paper's
analysis, plus

* ``EXAMPLE``, an :class:`Example`: its command-line name, paper, expected run
  time and :class:`Option` list (the release, the privacy budget, prior
  hyperparameters, sample sizes), each with a default and an argument check
  with its documented range (:func:`between`, :func:`integer`, :func:`vector`,
  :func:`yes_no`, :func:`choice`, :func:`subset`, :func:`folder`, :func:`positive`,
  :func:`finite`), shown in
  ``--help`` and applied by :meth:`Example.run` before anything is computed;
* ``run(*, <options>, rng=None, progressbar=True, verbose=False)``, returning a
  :class:`Result`: a :class:`Report` (one :class:`Row` per analysis and
  parameter, built by :func:`draw_rows`, :func:`distribution_rows`,
  :func:`mle_rows`, :func:`value_rows`), the posterior and a figure
  (:func:`interval_figure` by default, :func:`density_figure`);
* optionally ``check_options(**options)``, which refuses a combination of
  options that cannot run (a predicted cost past a budget, :func:`plan_sampler`;
  a release implausible under the prior) with a ValueError naming the options
  and what to change; it must be cheap, as it runs before the output folder is
  touched.

:func:`discover` imports the modules of a package (``dpinfer.models`` by
default, by name: the library never imports it otherwise) and collects every
``EXAMPLE``, so a new example is one new module or package, registered nowhere
else. :func:`save_run`, the report writer behind ``dpinfer run``, runs an
example into an output folder that cannot be half-written: ``summary.csv``,
``summary.json``, ``posterior.nc``, the figure and ``manifest.json`` last.
:data:`NUTS_OPTIONS`, :func:`nuts_options` and :func:`fit_each` are the NUTS
settings of an example fitted with PyMC; :func:`nuts_note`, :func:`smc_note`
and :func:`mle_interval_notes` turn a fit's diagnostics into report notes.

.. code-block:: python

    EXAMPLE = Example(
        name="my-example",                       # dpinfer run my-example
        title="What the analysis shows",
        paper="Author (2024), Section 3",
        seconds=30,                              # at the defaults, one core
        module=__name__,
        options=(
            Option("released", RELEASED, "the release", vector(4), flag="--release"),
            Option("epsilon", 1.0, "privacy budget", between(0.01, 10)),
            Option("draws", 2000, "posterior draws", integer(100, 10**5)),
        ),
    )

    def run(*, released=RELEASED, epsilon=1.0, draws=2000, rng=None,
            progressbar=True, verbose=False) -> Result:
        idata = dp.smc_abc(model(), mechanism(epsilon), released, particles=draws,
                           rng=rng, progressbar=progressbar)
        rows = draw_rows("exact (smc_abc)", "exact", idata_draws(idata))
        rows += distribution_rows("naive", "naive", naive_posterior(released))
        return Result(Report("My example (Author 2024)", ["setting"], rows), idata)

The tests (``tests/test_cli_run.py``) ask for a small setting of every example
(``TINY``), with which it runs once end to end.

Examples
--------
>>> import numpy as np
>>> from dpinfer.example import Example, Option, Report, Result, between, draw_rows
>>> def run(*, center=0.0, rng=None, progressbar=True, verbose=False):
...     draws = np.random.default_rng(rng).normal(center, 1.0, size=1000)
...     rows = draw_rows("normal draws", "exact", {"theta": draws})
...     return Result(Report("A demo", ["theta ~ N(center, 1)"], rows), posterior=None)
>>> demo = Example("demo", "a demo", "nobody (2025)", seconds=1,
...                options=(Option("center", 0.0, "the mean", between(-10, 10)),))
>>> demo.option("center").parse("2.5")
2.5
>>> demo.option("center").parse("11")
Traceback (most recent call last):
...
ValueError: center must be from -10 to 10, got '11'
"""

from ._budget import REJECTION_BUDGET, SamplerPlan, plan_sampler
from ._checks import (
    between,
    choice,
    finite,
    folder,
    integer,
    positive,
    subset,
    vector,
    yes_no,
)
from ._figures import density_figure, interval_figure, new_figure
from ._nuts import NUTS_DRAWS, NUTS_OPTIONS, fit_each, nuts_options
from ._report import mle_interval_notes, nuts_note, save_run, smc_note
from ._rows import (
    LEVELS,
    ROLES,
    Report,
    Result,
    Row,
    distribution_rows,
    draw_rows,
    idata_draws,
    mle_rows,
    value_rows,
)
from ._spec import LONG_RUN_SECONDS, Example, Option, discover

__all__ = [
    "LEVELS",
    "LONG_RUN_SECONDS",
    "NUTS_DRAWS",
    "NUTS_OPTIONS",
    "REJECTION_BUDGET",
    "ROLES",
    "Example",
    "Option",
    "Report",
    "Result",
    "Row",
    "SamplerPlan",
    "between",
    "choice",
    "density_figure",
    "discover",
    "distribution_rows",
    "draw_rows",
    "fit_each",
    "finite",
    "folder",
    "idata_draws",
    "integer",
    "interval_figure",
    "mle_interval_notes",
    "mle_rows",
    "new_figure",
    "nuts_note",
    "nuts_options",
    "plan_sampler",
    "positive",
    "save_run",
    "smc_note",
    "subset",
    "value_rows",
    "vector",
    "yes_no",
]
