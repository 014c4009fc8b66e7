r"""The nested-noise losses of SPPE and SPLE (Xiong, Ju and Zhang 2023, Section 3).

A batch holds, for each of ``B`` simulations, its parameters ``z`` (on the
unconstrained scale, ``(B, d)``), the log prior density there (``(B,)``) and
``M`` privatised copies of its statistic ``s`` (``(B, M, r)``). Each loss is the
mean over simulations of the mean over copies, the nested RQMC estimator (11)
of the inner integral :math:`\int \eta(s_{dp} \mid x)\, g(s_{dp}, \theta)\, ds_{dp}`.
"""

from __future__ import annotations

import torch


def posterior_loss(density, batch: dict, gen: torch.Generator) -> torch.Tensor:
    r"""First-round SPPE loss (7): :math:`-\log q(\theta_i \mid s_{dp,ij})`, averaged."""
    z, s = batch["z"], batch["s"]
    b, m, r = s.shape
    log_q = density.log_prob(z.repeat_interleave(m, dim=0), s.reshape(b * m, r))
    return -log_q.mean()


def atomic_loss(atoms: int):
    r"""Return the APT loss (8) with atomic proposals (Greenberg, Nonnenmacher, Macke 2019).

    For simulation :math:`i` the atoms are :math:`\theta_i` and ``atoms - 1``
    other parameters of the batch, drawn without replacement; with
    :math:`\ell_k = \log q(\theta_k \mid s_{dp,ij}) - \log \pi(\theta_k)` the loss
    is :math:`-(\ell_i - \log\sum_k e^{\ell_k})`, averaged over copies and
    simulations. Dividing by the prior is the proposal correction: it makes the
    minimiser the posterior whatever the proposal the atoms came from.
    """

    def loss(density, batch: dict, gen: torch.Generator) -> torch.Tensor:
        z, s, log_prior = batch["z"], batch["s"], batch["log_prior"]
        b, m, r = s.shape
        k = min(atoms, b)
        others = torch.ones(b, b) - torch.eye(b)
        picks = torch.multinomial(others, k - 1, replacement=False, generator=gen)
        index = torch.cat([torch.arange(b)[:, None], picks], dim=1)  # (b, k), own first
        atom_z = z[index]  # (b, k, d)
        context = s[:, :, None, :].expand(b, m, k, r).reshape(-1, r)
        theta = atom_z[:, None].expand(b, m, k, z.shape[1]).reshape(-1, z.shape[1])
        logits = density.log_prob(theta, context).reshape(b, m, k) - log_prior[index][:, None]
        return -(logits[..., 0] - torch.logsumexp(logits, dim=-1)).mean()

    return loss


def likelihood_loss(density, batch: dict, gen: torch.Generator) -> torch.Tensor:
    r"""SPLE loss (5): :math:`-\log q(s_{dp,ij} \mid \theta_i)`, averaged."""
    z, s = batch["z"], batch["s"]
    b, m, r = s.shape
    log_q = density.log_prob(s.reshape(b * m, r), z.repeat_interleave(m, dim=0))
    return -log_q.mean()
