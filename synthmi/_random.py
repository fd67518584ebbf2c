"""Record-keyed random streams: the same draws for a record however the data are split.

Synthesis draws a few random numbers per record (a uniform for each
categorical draw, a normal for each continuous one, K normals for each
masking replicate). With one sequential generator per copy the value a record
gets depends on how many records precede it *in the same chunk*, so a copy
made partition by partition (Dask) would differ from the in-memory one and
from itself under another partitioning. Here every record-level draw is
instead a pure function of (seed, copy, call, record position):

* a counter-based generator, NumPy's Philox4x64-10 (Salmon, Moraes, Dror &
  Shaw 2011, "Parallel random numbers: as easy as 1, 2, 3", SC'11), is keyed
  by (seed, copy, call index) through :class:`numpy.random.SeedSequence`;
* its output stream is indexed by position: output ``k`` is lane ``k mod 4``
  of counter ``k // 4``, so the draws of the records at positions
  ``o, ..., o + n - 1`` are read by setting the counter to ``o // 4`` and
  skipping ``o mod 4`` outputs (``w`` outputs per record when a record takes
  ``w`` values, e.g. K masking replicates: positions ``o w .. (o + n) w - 1``).

A uniform is :math:`u = (\\lfloor r / 2^{11} \\rfloor + 1/2)\\, 2^{-53}` from a
raw 64-bit output ``r`` (53 random bits, never 0 or 1) and a standard normal
is :math:`\\Phi^{-1}(u)` (inversion; exact in distribution, and one output per
value so that positions stay aligned, unlike rejection samplers).

The call index counts calls on the same :class:`PositionalRNG` in program
order, which is the same in every partition because the synthesizer runs the
same code on each; that is why one object per (copy, partition) is created.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy.special import ndtri

_TWO_M53 = 2.0**-53


def _philox_key(entropy: Sequence[int], tag: Sequence[int]) -> np.ndarray:
    ss = np.random.SeedSequence(entropy=[int(e) for e in entropy], spawn_key=tuple(int(t) for t in tag))
    return ss.generate_state(2, dtype=np.uint64)


def raw_stream(entropy: Sequence[int], tag: Sequence[int], start: int, count: int) -> np.ndarray:
    """Outputs ``start .. start + count - 1`` (uint64) of the stream keyed by (entropy, tag)."""
    if count <= 0:
        return np.empty(0, dtype=np.uint64)
    bg = np.random.Philox(key=_philox_key(entropy, tag), counter=np.array([start // 4, 0, 0, 0], dtype=np.uint64))
    skip = start % 4
    if skip:
        bg.random_raw(skip)
    return np.asarray(bg.random_raw(count), dtype=np.uint64)


def uniforms(entropy: Sequence[int], tag: Sequence[int], start: int, count: int) -> np.ndarray:
    """Uniforms in (0, 1), one per stream output (see the module docstring)."""
    r = raw_stream(entropy, tag, start, count)
    return ((r >> np.uint64(11)).astype(np.float64) + 0.5) * _TWO_M53


def entropy_from(rng: np.random.Generator) -> tuple[int, int]:
    """Two 63-bit integers drawn from ``rng``: the root key of a family of record streams."""
    e = rng.integers(0, 2**63 - 1, size=2, dtype=np.int64)
    return int(e[0]), int(e[1])


class PositionalRNG:
    """Duck-typed stand-in for a Generator whose draws are keyed by record position.

    Implements ``random(size)`` and ``standard_normal(size)`` where
    ``size = n`` or ``(n, w)``: ``n`` records starting at global position
    ``offset``, ``w`` values per record. Each call uses the next call index in
    its tag, so draws of different calls are independent streams.

    Parameters
    ----------
    entropy : pair of int
        Root key (see :func:`entropy_from`).
    tag : tuple of int
        Identifies the stream family, e.g. ``(copy,)``.
    offset : int
        Global position of the first record handled by this object.
    """

    def __init__(self, entropy: Sequence[int], tag: Sequence[int] = (), offset: int = 0):
        self.entropy = tuple(int(e) for e in entropy)
        self.tag = tuple(int(t) for t in tag)
        self.offset = int(offset)
        self.calls = 0

    def _next_tag(self) -> tuple[int, ...]:
        t = self.tag + (self.calls,)
        self.calls += 1
        return t

    def _u(self, size) -> np.ndarray:
        shape = (int(size),) if np.isscalar(size) else tuple(int(s) for s in size)
        n = shape[0] if shape else 1
        w = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        u = uniforms(self.entropy, self._next_tag(), self.offset * w, n * w)
        return u.reshape(shape) if shape else u[0]

    def random(self, size=None) -> np.ndarray:
        if size is None:
            return float(self._u(1)[0])
        return self._u(size)

    def standard_normal(self, size=None) -> np.ndarray:
        if size is None:
            return float(ndtri(self._u(1))[0])
        return ndtri(self._u(size))
