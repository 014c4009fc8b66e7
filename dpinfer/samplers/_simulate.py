"""Batched simulation of a per-particle score, chunked over an executor."""

from __future__ import annotations

import numpy as np

from .. import parallel


class BatchSimulator:
    """Simulates ``s ~ model(theta)`` for a batch and returns ``score(s, rng)`` per particle.

    The default score is ``log eta(released | s)``. Chunks are numbered by a
    running counter, so the generator of every chunk depends only on the root
    seed and the (deterministic) order of calls. ``float_output`` says whether
    the simulator has returned floats (integers are exact at any size).
    """

    def __init__(self, model, mechanism, released, root, *, batch_size, executor, score=None):
        self.model, self.mechanism, self.released = model, mechanism, released
        self.root, self.batch_size, self.executor = root, batch_size, executor
        self.score = score or (lambda s, rng: mechanism.logpdf(released, s))
        self.next_chunk = 0
        self.n_simulations = 0
        self.float_output = False

    def __call__(self, params: dict[str, np.ndarray]) -> np.ndarray:
        """Return the score of a fresh ``s_i`` for every parameter set."""
        n = len(next(iter(params.values())))
        if n == 0:
            return np.empty(0)
        starts = list(range(0, n, self.batch_size))
        first = self.next_chunk
        model, mech, score, size = self.model, self.mechanism, self.score, self.batch_size

        def task(index, rng):
            lo = starts[index - first]
            batch = {k: v[lo : lo + size] for k, v in params.items()}
            s = model.simulate_checked(batch, rng, event_shape=mech.event_shape)
            return score(s, rng), s.dtype.kind == "f"

        out = list(
            parallel.iter_chunks(
                task,
                self.root,
                executor=self.executor,
                start=first,
                stop=first + len(starts),
                in_flight=len(starts),
            )
        )
        self.next_chunk += len(starts)
        self.n_simulations += n
        self.float_output |= any(is_float for _, is_float in out)
        return np.concatenate([scores for scores, _ in out])
