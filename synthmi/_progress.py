"""Progress output: a live bar on a terminal, plain lines elsewhere.

tqdm redraws its bar with carriage returns; written to a file or a pipe (``2> log``,
a CI job) those pile up as one long line of fragments. On a terminal the bar is
drawn; otherwise each named step is one line on stderr, and nothing with
``enabled=False`` (``--quiet``).
"""
from __future__ import annotations

import sys
import time
from typing import Any, Callable, Iterable


class _Lines:
    """The part of tqdm's interface synthmi uses, writing one line per named step."""

    def __init__(self, iterable: Iterable | None, desc: str, enabled: bool):
        self._iterable = iterable
        self._desc = desc
        self._enabled = enabled

    def __iter__(self):
        return iter(self._iterable if self._iterable is not None else ())

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        if self._enabled:
            print(f"{self._desc}: {text}", file=sys.stderr, flush=True)

    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(iterable: Iterable | None = None, *, desc: str, enabled: bool = True, **tqdm_kw: Any):
    """``tqdm(iterable, desc=..., **tqdm_kw)`` when enabled and stderr is a terminal; else
    an object with the same methods (iteration, ``set_postfix_str``, ``update``, ``close``)
    printing one line per ``set_postfix_str`` step, or nothing when not ``enabled``."""
    if enabled and sys.stderr.isatty():
        from tqdm.auto import tqdm

        return tqdm(iterable, desc=desc, file=sys.stderr, **tqdm_kw)
    return _Lines(iterable, desc, enabled)


#: seconds between two progress lines of a long step (issue 28: "a progress line at least
#: every 10 seconds"; half of that leaves room for one slow iteration between two checks)
PROGRESS_EVERY: float = 5.0


class Throttle:
    """Says when a progress line is due: at the first call, then once ``every`` seconds.

    ``clock`` is injectable (a fake clock in the tests); the default is
    :func:`time.monotonic`. A caller that asks at least once per unit of work
    whose duration is ``w`` emits lines at most ``every + w`` seconds apart.
    """

    def __init__(self, every: float = PROGRESS_EVERY, clock: Callable[[], float] = time.monotonic):
        self.every = float(every)
        self.clock = clock
        self._last: float | None = None

    def due(self) -> bool:
        now = self.clock()
        if self._last is None or now - self._last >= self.every:
            self._last = now
            return True
        return False


def eta_text(done: int, total: int, elapsed: float) -> str:
    """``"1200/4000 iterations, 24 s elapsed, about 56 s left"``: the remaining time at the rate so far."""
    left = "" if done <= 0 or done >= total else f", about {elapsed * (total - done) / done:.0f} s left"
    return f"{done}/{total} iterations, {elapsed:.0f} s elapsed{left}"
