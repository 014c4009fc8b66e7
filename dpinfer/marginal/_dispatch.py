"""Compile-time dispatch of the marginal kernel on the latent family.

A :class:`~dpinfer.marginal._families.LatentFamily` record enters compiled code
as itself: numba types it as ``LatentFamilyType(name)`` (it carries no data at
run time), and the functions below resolve, while the kernel is compiled, to
the record's own compiled function, called directly and inlined. The kernel is
therefore compiled once per family, with no branch on the family in its loops,
and numba's on-disk cache keeps each family's kernel under the family's name
(an argument of this type pickles by its name; a kernel that took the family's
functions as arguments, or closed over them, could not be cached).

The cache is keyed on the kernel's source file, not on the record's functions:
after changing a family's compiled functions, remove ``dpinfer/marginal/__pycache__``.
"""

from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.core.imputils import lower_constant
from numba.extending import NativeValue, models, overload, register_model, unbox

__all__ = ["LatentFamilyType", "register", "registered"]

_REGISTERED: dict = {}


class LatentFamilyType(types.Type):
    """The numba type of one latent family (keyed by its name)."""

    def __init__(self, name: str):
        self.family_name = name
        super().__init__(name=f"LatentFamily({name})")

    @property
    def key(self):
        return self.family_name


register_model(LatentFamilyType)(models.OpaqueModel)


@unbox(LatentFamilyType)
def _unbox(typ, obj, c):
    # the family is a compile-time constant: nothing to carry at run time
    return NativeValue(cgutils.get_null_value(c.context.get_value_type(typ)))


def register(family) -> None:
    """Make ``family`` (a LatentFamily) callable in compiled code under its name."""
    if family.name in _REGISTERED and _REGISTERED[family.name] is not family:
        raise ValueError(f"a latent family named {family.name!r} is already registered")
    _REGISTERED[family.name] = family
    object.__setattr__(family, "_numba_type_", LatentFamilyType(family.name))


def registered() -> list:
    """Return the registered families, in the order of registration."""
    return list(_REGISTERED.values())


def _target(family, attribute: str):
    """Return the record's ``attribute`` for a family argument of compiled code, else None."""
    if not isinstance(family, LatentFamilyType):
        return None
    return getattr(_REGISTERED[family.family_name], attribute)


def has_poisson_fast_path(family) -> bool:
    """Whether ``family``, a family's numba type, is one with :mod:`._poisson`'s fast path.

    For an overload that chooses, as its caller is compiled, what a family compiles.
    """
    return bool(_target(family, "poisson_fast_path"))


# One factory per number of arguments: numba inlines an overload only when its arguments
# are spelt out.


def _constant(attribute: str):
    def call(family):
        raise NotImplementedError(f"latent_{attribute} is called in compiled code only")

    @overload(call, inline="always")
    def _resolve(family):
        value = _target(family, attribute)
        return None if value is None else (lambda family: value)

    return call


def _with_two(attribute: str):
    def call(family, a, b):
        raise NotImplementedError(f"latent_{attribute} is called in compiled code only")

    @overload(call, inline="always")
    def _resolve(family, a, b):
        fn = _target(family, attribute)
        return None if fn is None else (lambda family, a, b: fn(a, b))

    return call


def _with_three(attribute: str):
    def call(family, a, b, x):
        raise NotImplementedError(f"latent_{attribute} is called in compiled code only")

    @overload(call, inline="always")
    def _resolve(family, a, b, x):
        fn = _target(family, attribute)
        return None if fn is None else (lambda family, a, b, x: fn(a, b, x))

    return call


def _with_four(attribute: str):
    def call(family, a, b, x, y):
        raise NotImplementedError(f"latent_{attribute} is called in compiled code only")

    @overload(call, inline="always")
    def _resolve(family, a, b, x, y):
        fn = _target(family, attribute)
        return None if fn is None else (lambda family, a, b, x, y: fn(a, b, x, y))

    return call


# the members of a LatentFamily that compiled code calls (see dpinfer.marginal._families),
# each as ``member(family, *args)``
log_pmf = _with_three("log_pmf")
ratio = _with_three("ratio")
mode = _with_two("mode")
support = _with_two("support")
valid = _with_two("valid")
log_concave = _with_two("log_concave")
ratio_bound = _with_two("ratio_bound")
has_statistic = _constant("has_statistic")
statistic = _with_three("statistic")
statistic_step = _with_three("statistic_step")
scores = _with_four("scores")
at_boundary = _with_two("at_boundary")
boundary_scores = _with_three("boundary_scores")
poisson_fast_path = _constant("poisson_fast_path")


@lower_constant(LatentFamilyType)
def _lower_constant(context, builder, typ, pyval):
    # a family that compiled code closes over: no data at run time, as when it is an argument
    return cgutils.get_null_value(context.get_value_type(typ))
