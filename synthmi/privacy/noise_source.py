"""Where the privacy noise comes from, and keeping it secret.

A differentially private release is private only if its noise is unknown to the
reader. If the seed of the noise is published (or can be guessed), anyone who
knows the other records can re-run the release on the data with and without a
person and see which one reproduces it byte for byte (issue 11). Therefore:

* by default the noise is drawn from a generator seeded with fresh operating-
  system entropy (:func:`numpy.random.default_rng` with no seed), which lives
  only for the duration of ``fit`` and is never stored, printed or pickled;
* a user may still pass a seed for reproducible research. Then the release
  records only *that* a user seed was given (:func:`noise_provenance`), never its
  value, and a warning (:data:`USER_SEED_WARNING`) says once that anyone who
  learns the seed can undo the privacy;
* the noise stream and the stream that samples synthetic records are separate:
  from one user seed ``s`` the noise uses ``default_rng(s)`` and the sampling
  ``default_rng(SeedSequence(s, spawn_key=(1,)))``, a different stream, so the
  record draws never re-use (and never reveal) the noise draws.

:class:`SecretSeedMixin` masks ``random_state`` in ``repr`` and drops it from
pickles for the DP estimators.
"""
from __future__ import annotations

import numbers
import warnings
from typing import Any

import numpy as np

from .._validate import param_error

__all__ = [
    "USER_SEED_WARNING",
    "SecretSeedMixin",
    "noise_generator",
    "noise_provenance",
    "sampling_generator",
    "user_seed_given",
]

USER_SEED_WARNING = (
    "a user seed drives the privacy noise of this differentially private release: anyone who learns the "
    "seed can undo the privacy. Leave the seed unset (operating-system entropy) for a real release; the "
    "release records only that a user seed was given, never its value."
)

# Spawn key of the sampling stream derived from a user seed (the noise uses the seed itself).
_SAMPLING_STREAM = 1


def user_seed_given(random_state: Any) -> bool:
    """Whether ``random_state`` is a user-controlled seed (anything but ``None``)."""
    return random_state is not None


def _check(random_state: Any, owner: str) -> None:
    if random_state is None or isinstance(random_state, np.random.Generator):
        return
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool) and random_state >= 0:
        return
    # The value is the user's own seed, so naming its type (not its value) is enough.
    raise param_error("random_state", owner, "None, a Generator or an int >= 0", f"a {type(random_state).__name__}")


def noise_generator(random_state: Any, owner: str) -> np.random.Generator:
    """The generator of the privacy noise.

    ``None``: fresh OS entropy (the default; nothing to record). An int:
    ``default_rng(seed)`` and a :data:`USER_SEED_WARNING`. A Generator: used as
    is, with the warning.
    """
    _check(random_state, owner)
    if random_state is None:
        return np.random.default_rng()
    warnings.warn(f"{owner}: {USER_SEED_WARNING}", UserWarning, stacklevel=3)
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(int(random_state))


def sampling_generator(random_state: Any, owner: str) -> np.random.Generator:
    """The generator of post-processing draws (synthetic records), separate from the noise."""
    _check(random_state, owner)
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(np.random.SeedSequence(int(random_state), spawn_key=(_SAMPLING_STREAM,)))


def noise_provenance(user_seed: bool) -> str:
    """What a release says about its noise: never a seed or entropy value."""
    if user_seed:
        return "a user seed was given (value not recorded); not private against anyone who learns it"
    return "fresh operating-system randomness, not recorded"


class SecretSeedMixin:
    """``repr`` without the seed and pickles without it (DP estimators with ``random_state``).

    The estimator keeps ``random_state`` as an attribute (scikit-learn convention;
    the caller passed it and already knows it) but never shows or serialises it.
    """

    def __repr__(self) -> str:
        import inspect

        names = [n for n in inspect.signature(type(self).__init__).parameters if n != "self"]
        params = {n: getattr(self, n, None) for n in names}
        parts = []
        for k, v in params.items():
            if k == "random_state":
                parts.append("random_state=" + ("None" if v is None else "<user seed, not shown>"))
            else:
                parts.append(f"{k}={v!r}")
        return f"{type(self).__name__}(" + ", ".join(parts) + ")"

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        if state.get("random_state") is not None:
            state["random_state"] = None
            state["user_seed_given_"] = True
        return state
