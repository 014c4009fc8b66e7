"""Reported Monte Carlo error against the across-seed error, per sampler and example.

For each example and sampler, ``--replicates`` runs with seeds 0, 1, ... give
posterior means; their root-mean-square deviation from the exact posterior mean
is the real error. Each run also reports an error, ``sd / sqrt(ESS)``, for the
ESS figures it carries:

* ``ess``: the result's ``attrs['ess']``, the figure to divide by (the smaller of
  the sampler's own figure and ArviZ's bulk ESS, see :mod:`dpinfer.results`);
* ``sampler``: ``attrs['ess_sampler']``: i.i.d. draws for rejection ABC; the
  delta-method ESS of the weighted mean for importance ABC; the ancestral-lineage
  (Eve) estimate for SMC-ABC (Lee and Whiteley 2018), or the between-chain one when
  a chain keeps too few lineages;
* ``kish``: the Kish ESS of the weights (importance, SMC), the figure ``ess_sampler``
  was before;
* ``bulk``: ArviZ's bulk ESS of the stored draws;
* ``between``: the spread of the chains' means (4 chains: 3 degrees of freedom).

The table prints ``real / reported`` (1 = honest; above 1.3, over-optimistic) and the
real ESS, ``posterior variance / mean squared error``. With ``R`` replicates a ratio is
known to about ``1 / sqrt(2 R)``. Exact references: sums over the count (and quadrature
on a 4000-point grid for continuous parameters); the Normal-mean example convolves the
Normal sampling density with the Laplace noise in closed form.

Usage: ``python benchmarks/reported_error.py [--replicates 20] [--quick]``
(``--quick``: 6 replicates, fewer examples).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import scipy.stats as st
from scipy.special import log_ndtr, logsumexp

import dpinfer as dp
from dpinfer.samplers._mcse import between_chain_ess, error_ratio

N_DRAWS = 2000
ESTIMATORS = ("ess", "sampler", "kish", "bulk", "between")


# --- examples: (model, mechanism, release, exact posterior means) ----------------------------
def count_example():
    trials, release, mech = 60, 30, dp.DiscreteLaplace(3.0)
    model = dp.Model(
        prior={"K": st.randint(1, 21)},
        simulate=lambda p, rng: rng.binomial(trials, p["K"] / 25),
    )
    ks, s = np.arange(1, 21), np.arange(trials + 1)
    log_eta = mech.logpdf(release, s.astype(float))
    log_post = np.array([logsumexp(st.binom.logpmf(s, trials, k / 25) + log_eta) for k in ks])
    p = np.exp(log_post - logsumexp(log_post))
    return model, mech, release, {"K": float(p @ ks)}


def mixed_example():
    release, mech = 12, dp.DiscreteLaplace(1.0)
    model = dp.Model(
        prior={"w": st.beta(2, 2), "K": st.randint(1, 11)},
        simulate=lambda p, rng: rng.binomial(5 * p["K"], p["w"]),
    )
    w, ks, s = (np.arange(2000) + 0.5) / 2000, np.arange(1, 11), np.arange(51)
    log_eta = mech.logpdf(release, s.astype(float))
    log_lik = logsumexp(
        st.binom.logpmf(s[None, None], 5 * ks[:, None, None], w[None, :, None]) + log_eta, axis=2
    )
    p = np.exp(log_lik + st.beta(2, 2).logpdf(w)[None] - logsumexp(log_lik))
    p /= p.sum()
    return model, mech, release, {"K": float(p.sum(1) @ ks), "w": float(p.sum(0) @ w)}


def poisson_example():
    """Gong (2022), Section 5.1: theta ~ Gamma(25), s ~ Poisson(theta), Laplace eps = 0.2."""
    release, mech = 37.4, dp.Laplace.from_privacy(epsilon=0.2, sensitivity=1.0)
    model = dp.Model(
        prior={"theta": st.gamma(25)}, simulate=lambda p, rng: rng.poisson(p["theta"])
    )
    theta, s = np.linspace(2, 90, 4000), np.arange(400)
    log_eta = mech.logpdf(release, s.astype(float))
    log_lik = logsumexp(st.poisson.logpmf(s[None], theta[:, None]) + log_eta, axis=1)
    log_post = log_lik + st.gamma(25).logpdf(theta)
    p = np.exp(log_post - logsumexp(log_post))
    return model, mech, release, {"theta": float(p @ theta)}


SD_STAT = 0.1  # sd of the confidential mean given mu


def normal_mean_example(epsilon):
    """mu ~ N(0, 1); s ~ N(mu, 0.1^2); Laplace noise of scale 0.1 / epsilon; release 0.3."""
    release = 0.3
    mech = dp.Laplace.from_privacy(epsilon=epsilon, sensitivity=SD_STAT)
    model = dp.Model(
        prior={"mu": st.norm(0, 1)}, simulate=lambda p, rng: rng.normal(p["mu"], SD_STAT)
    )
    mu = np.linspace(release - 1, release + 1, 40001)
    log_post = st.norm.logpdf(mu) + normal_laplace_logpdf(release - mu, SD_STAT, mech.scale)
    p = np.exp(log_post - logsumexp(log_post))
    return model, mech, release, {"mu": float(p @ mu)}


def normal_laplace_logpdf(x, sigma, b):
    """Log density of N(0, sigma^2) + Laplace(0, b) at ``x`` (Reed 2006), stable for small b."""
    a = sigma / b
    left = -x / b + log_ndtr(x / sigma - a)
    right = x / b + log_ndtr(-x / sigma - a)
    return np.log(0.5 / b) + a * a / 2 + np.logaddexp(left, right)


# --- runs ----------------------------------------------------------------------------------
def run_sampler(name, model, mech, release, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name == "smc_abc":
            return dp.smc_abc(model, mech, release, particles=N_DRAWS, rng=seed, progressbar=False)
        sampler = getattr(dp, name)
        return sampler(model, mech, release, draws=N_DRAWS, rng=seed, progressbar=False)


def reported(idata, name):
    """ESS figures of one run (NaN where an estimator does not apply)."""
    post = idata.posterior
    values = np.concatenate(
        [np.asarray(post[k], float).reshape(post.sizes["chain"], post.sizes["draw"], -1)
         for k in post.data_vars], axis=-1,
    )  # fmt: skip
    out = {
        "ess": idata.attrs["ess"],
        "sampler": idata.attrs["ess_sampler"],
        "bulk": idata.attrs["ess_bulk"],
        "between": between_chain_ess(values),
        "kish": idata.attrs.get("ess_kish", np.nan),
    }
    return out


def replicate(example, name, replicates):
    model, mech, release, exact = example
    rows, start = [], time.process_time()
    for seed in range(replicates):
        idata = run_sampler(name, model, mech, release, seed)
        row = {"sims": idata.attrs["n_simulations"], **reported(idata, name)}
        for k in exact:
            row[f"mean_{k}"] = float(idata.posterior[k].mean())
            row[f"sd_{k}"] = float(idata.posterior[k].std())
        rows.append(row)
    seconds = (time.process_time() - start) / replicates
    return rows, seconds


def summarise(label, name, exact, rows, seconds):
    lines = []
    for k, ref in exact.items():
        means = np.array([r[f"mean_{k}"] for r in rows])
        sds = np.array([r[f"sd_{k}"] for r in rows])
        real_ess = float(np.mean(sds**2) / np.mean((means - ref) ** 2))
        ratios = []
        for est in ESTIMATORS:
            ess = np.array([r[est] for r in rows], dtype=float)
            ok = np.isfinite(ess)
            ratio = error_ratio(means[ok], sds[ok] / np.sqrt(ess[ok]), ref) if ok.all() else np.nan
            ratios.append(ratio)
        mean_ess = np.mean([r["ess"] for r in rows])
        sims = np.mean([r["sims"] for r in rows])
        lines.append(
            f"{label:<16}{name:<15}{k:<6}{real_ess:>9.0f}{mean_ess:>9.0f}"
            + "".join(f"{x:>9.2f}" for x in ratios)
            + f"{real_ess / sims * 1e3:>10.3g}{seconds:>8.2f}"
        )
    return lines


def replicate_count(doc: str, quick: int) -> tuple[int, bool]:
    """Parse ``--replicates`` and ``--quick`` (``quick`` replicates); return both."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=20)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    return (quick if args.quick else args.replicates), args.quick


def main() -> None:
    replicates, quick = replicate_count(__doc__, 6)
    all_samplers = ("rejection_abc", "importance_abc", "smc_abc")
    cases = [
        ("count K", count_example(), all_samplers),
        ("mixed (w, K)", mixed_example(), all_samplers),
        ("poisson 5.1", poisson_example(), all_samplers),
    ]
    epsilons = (1.0, 100.0) if quick else (1.0, 10.0, 100.0, 1000.0)
    cases += [(f"normal eps={e:g}", normal_mean_example(e), ("smc_abc",)) for e in epsilons]
    print(f"{replicates} replicates of {N_DRAWS} draws (particles) per run, 4 chains each")
    head = "".join(f"{e:>9}" for e in ESTIMATORS)
    print(
        f"{'example':<16}{'sampler':<15}{'par':<6}{'real ESS':>9}{'rep. ESS':>9}{head}"
        f"{'ESS/ksim':>10}{'cpu s':>8}"
    )
    print(" " * 46 + "real error / reported error, per ESS estimator")
    for label, example, samplers in cases:
        for name in samplers:
            rows, seconds = replicate(example, name, replicates)
            print("\n".join(summarise(label, name, example[3], rows, seconds)), flush=True)


if __name__ == "__main__":
    main()
