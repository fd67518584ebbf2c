"""Progress output: a live bar on a terminal, plain lines elsewhere.

tqdm redraws its bar with carriage returns; written to a file or a pipe (``2> log``,
a CI job) those pile up as one long line of fragments. On a terminal the bar is
drawn; otherwise each named step is one line on stderr, and nothing with
``enabled=False`` (``--quiet``).
"""
from __future__ import annotations

import sys
from typing import Any, Iterable


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
