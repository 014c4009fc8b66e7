"""Which code libraries numba linked into a compiled function (tests of ``._native``)."""

from __future__ import annotations


def linked_libraries(dispatcher, signature=None) -> set[int]:
    """Ids of the libraries linked into ``dispatcher``'s code for ``signature`` (its only one)."""
    if signature is None:
        (compiled,) = dispatcher.overloads.values()
    else:
        compiled = dispatcher.overloads[signature]
    found, waiting = set(), [compiled.library]
    while waiting:
        for library in waiting.pop()._linking_libraries:
            if id(library) not in found:
                found.add(id(library))
                waiting.append(library)
    return found
