"""Census-shaped releases at scale: read, least squares and the lattice sampler.

Two releases, both synthetic (``dpinfer.census.synthetic_state``, PL94-like
variances, the state total exact):

* ``state``: 105,000 blocks (20 counties x 50 tracts x 3 block groups x 35 blocks),
  a 4-cell histogram (votingage x hispanic) and its 4 marginals at every level:
  about 10^6 noisy measurements. Read from a Parquet release folder, gls, and the
  sampler.
* ``pl94``: 24,750 blocks (10 x 25 x 3 x 33) with the PL94 persons histogram
  (hhgq 8 x votingage 2 x hispanic 2 x cenrace 63 = 2,016 cells) and its 16
  marginals at every level (PL94-like variances): gls, and the sampler's rate and
  memory over a few rounds (no interval histograms).

Each stage runs in its own process; its CPU time (``time.process_time``) and peak
resident memory (``ru_maxrss``) are printed. A *cell update* is one proposed move
of one person (between two cells of a leaf, between two leaves, a birth or death,
or a swap) scored against every measured cell it changes and accepted or rejected;
proposals refused before scoring (an empty source cell, a move an invariant forbids)
are not counted.

``--bluedown PATH`` (a checkout of google-research/census-bluedown) adds the
comparison of ``_bluedown.py``: BlueDown's linear pass, run as a subprocess by
the Python of its own venv (``--bluedown-python``; by default ``bluedown-venv``
beside the checkout), against dpinfer's ``gls`` on the same synthetic releases
(50,000 and 105,000 blocks, 4-cell histogram) written in the Census Bureau's
noisy measurement file layout: CPU time of each, the ratio, and the agreement of
the estimates. Without it the comparison is skipped with a message.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time

from _bluedown import CASES as BLUEDOWN_CASES
from _bluedown import compare, default_python

CASES = {
    "state": ({"votingage": 2, "hispanic": 2}, (20, 50, 3, 35)),
    "pl94": ({"hhgq": 8, "votingage": 2, "hispanic": 2, "cenrace": 63}, (10, 25, 3, 33)),
}


def make(case, folder):
    from dpinfer import census

    axes, shape = CASES[case]
    truth = census.synthetic_state(axes, shape=shape, mean_block=30, rng=1)
    release = census.synthetic_release(truth, census.pl94_variances(axes), rng=2)
    census.write_release(release, folder, format="parquet")
    return release


def stage(case, name, folder, rounds):
    from dpinfer import census

    start = time.process_time()
    if case == "pl94":
        axes, shape = CASES[case]
        truth = census.synthetic_state(axes, shape=shape, mean_block=30, rng=1)
        release = census.synthetic_release(truth, census.pl94_variances(axes), rng=2)
    else:
        release = census.read_release(folder)
    read = time.process_time() - start
    out = {"case": case, "stage": name, "units": len(release.units),
           "blocks": int(release.units.leaves.size), "measurements": release.n_measurements,
           "read_cpu_s": read}  # fmt: skip
    if name == "gls":
        start = time.process_time()
        fit = census.gls(release)
        out["gls_cpu_s"] = time.process_time() - start
        out["gls_method"] = fit.method
    if name == "sample":
        start = time.process_time()
        census.sample_posterior(release, draws=1, tune=0, chains=1, rng=3, progressbar=False,
                                intervals=False)  # compile and start  # fmt: skip
        out["first_round_cpu_s"] = time.process_time() - start
        post = census.sample_posterior(release, draws=rounds, tune=0, chains=1, rng=4,
                                       progressbar=False, intervals=case == "state")  # fmt: skip
        out["rounds"] = rounds
        out["cell_updates_per_cpu_s"] = post.rate
        out["acceptance"] = post.idata.attrs["acceptance_rate"]
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="state,pl94")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bluedown", default=None, help="a census-bluedown checkout to compare")
    parser.add_argument("--bluedown-python", default=None, help="the Python of BlueDown's venv")
    parser.add_argument("--child", nargs=3, metavar=("CASE", "STAGE", "DIR"))
    args = parser.parse_args()
    if args.child:
        stage(*args.child, args.rounds)
        return
    print("machine: shared 2-core; CPU seconds by time.process_time, peak RSS per process")
    bluedown(args.bluedown, args.bluedown_python)
    for case in filter(None, args.cases.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            folder = f"{tmp}/release"
            if case == "state":
                start = time.process_time()
                make(case, folder)
                print(json.dumps({"case": case, "stage": "synthesise+write",
                                  "cpu_s": time.process_time() - start}))  # fmt: skip
            for name in ("read", "gls", "sample"):
                if case == "pl94" and name == "read":
                    continue
                cmd = [sys.executable, __file__, "--rounds", str(args.rounds), "--child", case,
                       name, folder]  # fmt: skip
                subprocess.run(cmd, check=True)


def bluedown(checkout, python):
    """Print the BlueDown comparison of ``_bluedown.py``, or why it is skipped."""
    if checkout is None:
        print("BlueDown comparison skipped: pass --bluedown PATH (a census-bluedown checkout)")
        return
    python = python or default_python(checkout)
    for case in BLUEDOWN_CASES:
        print(json.dumps(compare(checkout, python, case)))


if __name__ == "__main__":
    main()
