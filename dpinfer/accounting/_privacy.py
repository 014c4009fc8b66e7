"""``Privacy``: a guarantee computed from mechanism parameters, its conversions and composition."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import _validate
from .._numbers import fsum_or_inf
from ._zcdp import zcdp_to_approx

__all__ = ["Privacy", "compose"]


@dataclass(frozen=True)
class Privacy:
    r"""A differential privacy guarantee, computed from mechanism parameters.

    Three notions share this class: pure :math:`\varepsilon`-DP (``delta == 0``),
    approximate :math:`(\varepsilon, \delta)`-DP, and :math:`\rho`-zCDP alone
    (``epsilon=None``: a zero-concentrated guarantee that states no
    :math:`(\varepsilon, \delta)` pair until a delta is chosen, as the discrete
    Gaussian releases of the 2020 US Census and of Wikimedia are stated).

    Parameters
    ----------
    epsilon : float or None
        Privacy-loss bound; ``inf`` means no guarantee. None for a guarantee
        stated in zCDP only (then ``rho`` is required and ``delta`` is 0).
    delta : float, default 0
        Failure probability of approximate DP; 0 for pure DP.
    rho : float, optional
        Zero-concentrated DP parameter, where the mechanism has one; ``inf``
        (beyond the float64 range) means no guarantee.
    neighbouring : str, optional
        The neighbouring relation under which the guarantee holds.

    Notes
    -----
    :meth:`to_approx` gives the :math:`(\varepsilon, \delta)` guarantee implied
    at a chosen delta (for rho-zCDP, Bun & Steinke 2016, Proposition 1.3:
    :math:`\varepsilon = \rho + 2\sqrt{\rho \log(1/\delta)}`); :meth:`to_zcdp`
    the zCDP one (pure :math:`\varepsilon`-DP is :math:`\varepsilon^2/2`-zCDP,
    Proposition 1.4). Composition is :func:`dpinfer.accounting.compose`.

    References
    ----------
    .. [1] Bun and Steinke (2016). Concentrated differential privacy:
       simplifications, extensions, and lower bounds. TCC.

    Examples
    --------
    >>> Privacy(epsilon=0.5).notion
    'pure'
    >>> Privacy(epsilon=1.0, delta=1e-6, rho=0.08).notion
    'approximate'
    >>> zcdp = Privacy(rho=0.015)
    >>> zcdp.notion, str(zcdp)
    ('zCDP', '0.015-zCDP')
    >>> print(zcdp.to_approx(1e-7))
    (0.998405, 1e-07)-DP, 0.015-zCDP
    """

    epsilon: float | None = None
    delta: float = 0.0
    rho: float | None = None
    neighbouring: str = ""

    def __post_init__(self):
        # frozen: the checked values (plain floats) are written through object.__setattr__
        rho = None if self.rho is None else _validate.positive_or_inf("rho", self.rho)
        if self.epsilon is None:
            if rho is None:
                raise ValueError(
                    "Privacy needs epsilon (or rho, for a guarantee stated in zCDP only), "
                    "got epsilon=None and rho=None"
                )
            if self.delta != 0:
                raise ValueError(
                    "a guarantee stated in zCDP only (epsilon=None) has no delta; got "
                    f"delta={self.delta!r} (use to_approx(delta) for an (epsilon, delta) pair)"
                )
            epsilon = None
        else:
            epsilon = _validate.positive_or_inf("epsilon", self.epsilon)
        checked = {"epsilon": epsilon, "delta": _validate.delta("delta", self.delta), "rho": rho}
        if not isinstance(self.neighbouring, str):
            raise TypeError(f"neighbouring must be a str, got {self.neighbouring!r}")
        for key, value in checked.items():
            object.__setattr__(self, key, value)

    @property
    def notion(self) -> str:
        """``'zCDP'`` (rho only), ``'pure'`` (``delta == 0``) or ``'approximate'``."""
        if self.epsilon is None:
            return "zCDP"
        return "pure" if self.delta == 0 else "approximate"

    def to_approx(self, delta: float) -> Privacy:
        r"""Return the :math:`(\varepsilon, \delta)` guarantee this one implies at ``delta``.

        The smaller of the two conversions that apply: rho-zCDP gives
        :math:`\rho + 2\sqrt{\rho \log(1/\delta)}` (Bun & Steinke 2016,
        Proposition 1.3), and an :math:`(\varepsilon, \delta_0)` guarantee with
        :math:`\delta_0 \le \delta` holds as it is.

        Parameters
        ----------
        delta : float
            The target delta, in (0, 1).

        Returns
        -------
        Privacy
            With ``epsilon`` and ``delta`` set, ``rho`` and ``neighbouring`` kept.

        Examples
        --------
        >>> round(Privacy(rho=0.5).to_approx(1e-6).epsilon, 4)
        5.7565
        >>> Privacy(epsilon=0.3).to_approx(1e-6).epsilon
        0.3
        """
        dlt = _validate.probability_open("delta", delta)
        candidates = []
        if self.rho is not None:
            candidates.append(zcdp_to_approx(self.rho, dlt))
        if self.epsilon is not None and self.delta <= dlt:
            candidates.append(self.epsilon)
        if not candidates:
            raise ValueError(
                f"{self} implies no guarantee at the smaller delta={delta!r} (it states no rho)"
            )
        return Privacy(min(candidates), dlt, self.rho, self.neighbouring)

    def to_zcdp(self) -> Privacy:
        r"""Return the rho-zCDP guarantee this one implies (``epsilon=None``).

        Its own ``rho`` where it states one; pure :math:`\varepsilon`-DP is
        :math:`\varepsilon^2/2`-zCDP (Bun & Steinke 2016, Proposition 1.4);
        approximate DP without a rho implies no zCDP guarantee (ValueError).

        Examples
        --------
        >>> print(Privacy(epsilon=0.5).to_zcdp())
        0.125-zCDP
        """
        if self.rho is not None:
            return Privacy(rho=self.rho, neighbouring=self.neighbouring)
        if self.epsilon is not None and self.delta == 0 and math.isfinite(self.epsilon):
            # 0.5 eps eps: inf beyond the float range, where eps**2 raises OverflowError
            return Privacy(rho=0.5 * self.epsilon * self.epsilon, neighbouring=self.neighbouring)
        raise ValueError(
            f"{self} implies no zCDP guarantee (approximate DP without a rho, or no guarantee)"
        )

    def __str__(self) -> str:
        if self.epsilon is None:
            return f"{self.rho:.6g}-zCDP"
        text = f"({self.epsilon:.6g}, {self.delta:.3g})-DP"
        if self.rho is not None:
            text += f", {self.rho:.6g}-zCDP"
        return text


def compose(*guarantees: Privacy) -> Privacy:
    """Sequential composition: epsilons, deltas and zCDP rhos add up.

    Parameters
    ----------
    *guarantees : Privacy
        Guarantees of mechanisms run on the same data.

    Returns
    -------
    Privacy
        When every input states an epsilon: the basic composition bound
        (Dwork & Roth 2014, Theorem 3.16), with ``rho`` the sum of the rhos
        when every input has one (Bun & Steinke 2016, Lemma 2.3). When some
        input is stated in zCDP only (``epsilon=None``): the zCDP guarantee
        with the rhos added, a pure ``epsilon``-DP input counting as
        ``epsilon**2 / 2``-zCDP (Bun & Steinke 2016, Proposition 1.4); an
        approximate-DP input without a rho is then refused (it implies no
        zCDP guarantee): convert the zCDP inputs with ``to_approx(delta)``
        first and compose those. An epsilon or rho sum beyond the float64
        range is ``inf`` (no guarantee).

    Raises
    ------
    ValueError
        When the deltas add up to 1 or more: basic composition then guarantees
        nothing (every mechanism is (epsilon, 1)-DP), so no Privacy is returned.

    Examples
    --------
    >>> compose(Privacy(0.5), Privacy(0.25, 1e-6)).epsilon
    0.75
    >>> print(compose(Privacy(rho=0.015), Privacy(rho=0.015), Privacy(0.1)))
    0.035-zCDP
    >>> compose(Privacy(1e308), Privacy(1e308)).epsilon
    inf
    """
    if not guarantees:
        raise ValueError("compose needs at least one Privacy, got none")
    for g in guarantees:
        if not isinstance(g, Privacy):
            raise TypeError(f"compose takes Privacy objects, got {type(g).__name__}: {g!r}")
    if any(g.epsilon is None for g in guarantees):
        return _compose_zcdp(guarantees)
    delta = math.fsum(g.delta for g in guarantees)
    if not delta < 1:
        raise ValueError(
            f"compose: the deltas of the {len(guarantees)} guarantees add up to {delta:.6g}, "
            "at least 1, so basic composition guarantees nothing (every mechanism is "
            "(epsilon, 1)-DP); compose fewer guarantees, or ones with smaller deltas (an "
            "advanced composition or zCDP/Renyi accounting may give a useful bound)"
        )
    rhos = [g.rho for g in guarantees]
    return Privacy(
        epsilon=fsum_or_inf(g.epsilon for g in guarantees),
        delta=delta,
        rho=fsum_or_inf(rhos) if all(r is not None for r in rhos) else None,
    )


def _compose_zcdp(guarantees) -> Privacy:
    rhos = []
    for g in guarantees:
        if g.rho is None and g.delta > 0:
            raise ValueError(
                f"compose cannot add {g} to a guarantee stated in zCDP only: approximate DP "
                "without a rho implies no zCDP guarantee; convert the zCDP ones with "
                "to_approx(delta) and compose those"
            )
        rhos.append(g.to_zcdp().rho)
    return Privacy(rho=fsum_or_inf(rhos))
