r"""The nested-noise losses of SPPE and SPLE (Xiong, Ju and Zhang 2023, Section 3).

A batch holds, for each of ``B`` simulations, its parameters ``z`` (on the
unconstrained scale, ``(B, d)``), the log prior density there (``(B,)``) and
``M`` privatised copies of its statistic ``s`` (``(B, M, r)``). Each loss is the
mean over simulations of the mean over copies, the nested RQMC estimator (11)
of the inner integral :math:`\int \eta(s_{dp} \mid x)\, g(s_{dp}, \theta)\, ds_{dp}`.

With ``copies`` below ``M``, each training step averages over a random subset
of ``copies`` of every simulation's ``M`` copies, drawn afresh at every step: an
unbiased estimate of the same loss (and gradient), whose minimiser is therefore
unchanged, at ``copies / M`` of the cost of the step's density evaluations.
"""

from __future__ import annotations

import torch


def subsample_copies(s: torch.Tensor, copies: int | None, gen: torch.Generator) -> torch.Tensor:
    """Return ``copies`` of the ``M`` copies of each simulation, drawn without replacement.

    ``s`` is ``(B, M, r)``; with ``copies`` None or at least ``M`` it is returned
    as it is (and ``gen`` is not used).
    """
    b, m, _ = s.shape
    if copies is None or copies >= m:
        return s
    pick = torch.rand(b, m, generator=gen).argsort(dim=1)[:, :copies].to(s.device)
    return s[torch.arange(b, device=s.device)[:, None], pick]


def posterior_loss(copies: int | None = None):
    r"""Return the first-round SPPE loss (7): :math:`-\log q(\theta_i \mid s_{dp,ij})`, averaged.

    ``copies``: noise copies per simulation in each step (None: all).
    """

    def loss(density, batch: dict, gen: torch.Generator) -> torch.Tensor:
        z, s = batch["z"], subsample_copies(batch["s"], copies, gen)
        return -density.log_prob(z[:, None], s).mean()

    return loss


def atomic_loss(atoms: int, copies: int | None = None):
    r"""Return the APT loss (8) with atomic proposals (Greenberg, Nonnenmacher, Macke 2019).

    For simulation :math:`i` the atoms are :math:`\theta_i` and ``atoms - 1``
    other parameters of the batch, drawn without replacement; with
    :math:`\ell_k = \log q(\theta_k \mid s_{dp,ij}) - \log \pi(\theta_k)` the loss
    is :math:`-(\ell_i - \log\sum_k e^{\ell_k})`, averaged over copies and
    simulations. Dividing by the prior is the proposal correction: it makes the
    minimiser the posterior whatever the proposal the atoms came from.
    """

    def loss(density, batch: dict, gen: torch.Generator) -> torch.Tensor:
        z, log_prior = batch["z"], batch["log_prior"]
        s = subsample_copies(batch["s"], copies, gen)
        b = s.shape[0]
        k = min(atoms, b)
        others = torch.ones(b, b) - torch.eye(b)
        picks = torch.multinomial(others, k - 1, replacement=False, generator=gen)
        index = torch.cat([torch.arange(b)[:, None], picks], dim=1).to(z.device)  # own first
        # contexts (b, m, 1, r) against atoms (b, 1, k, d): logits (b, m, k)
        log_q = density.log_prob(z[index][:, None], s[:, :, None, :])
        logits = log_q - log_prior[index][:, None]
        return -(logits[..., 0] - torch.logsumexp(logits, dim=-1)).mean()

    return loss


def likelihood_loss(copies: int | None = None):
    r"""Return the SPLE loss (5): :math:`-\log q(s_{dp,ij} \mid \theta_i)`, averaged."""

    def loss(density, batch: dict, gen: torch.Generator) -> torch.Tensor:
        z, s = batch["z"], subsample_copies(batch["s"], copies, gen)
        return -density.log_prob(s, z[:, None]).mean()

    return loss
