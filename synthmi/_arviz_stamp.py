"""Keep ArviZ 0.23 from writing ``daily_warning`` into the user's cache directory.

ArviZ 0.23.x runs ``_warn_once_per_day()`` when the package is first imported
(``arviz/__init__.py``; PyMC imports ArviZ, so any synthesis does): unless its
``arviz.preview.info`` reports all three refactored packages (``arviz_base``,
``arviz_stats``, ``arviz_plots``) as installed, it creates
``platformdirs.user_cache_dir("arviz")`` (``~/.cache/arviz`` on Linux) and writes
a date stamp ``daily_warning`` there, to show a FutureWarning about its refactor
at most once a day. ArviZ offers no setting or environment variable to turn
this off (checked in the sources of 0.23.0 to 0.23.4); the warning is hidden by
``synthmi/__init__.py`` anyway, and synthmi creates no file the user did not name.

So, while ``arviz/__init__.py`` executes (and only then), ``arviz.preview`` is a
stand-in whose ``info`` reports the three packages, which skips the stamp; the
stand-in removes itself at that first use, and ``arviz/__init__`` then imports
the real ``arviz.preview`` itself (``from . import preview``), so ArviZ ends up
exactly as imported without synthmi. Nothing happens if ArviZ was imported
before synthmi.
"""
from __future__ import annotations

import sys
import types

_ALL_AVAILABLE = "arviz_base available\narviz_stats available\narviz_plots available\n"


class _PreviewStandIn(types.ModuleType):
    """``arviz.preview`` for the one look at ``info`` in ``_warn_once_per_day``."""

    @property
    def info(self) -> str:
        if sys.modules.get("arviz.preview") is self:
            del sys.modules["arviz.preview"]
        return _ALL_AVAILABLE


class _Loader:
    """ArviZ's own loader, with the stand-in in place while ``arviz/__init__`` runs."""

    def __init__(self, real):
        self._real = real

    def __getattr__(self, name):
        return getattr(self._real, name)

    def create_module(self, spec):
        return self._real.create_module(spec)

    def exec_module(self, module) -> None:
        stand_in = _PreviewStandIn("arviz.preview")
        sys.modules.setdefault("arviz.preview", stand_in)
        try:
            self._real.exec_module(module)
        finally:
            if sys.modules.get("arviz.preview") is stand_in:
                del sys.modules["arviz.preview"]
            # resources and reloads see ArviZ's own loader
            module.__loader__ = self._real
            if getattr(module, "__spec__", None) is not None:
                module.__spec__.loader = self._real


class _Finder:
    """A meta-path finder that only wraps the loader of the top-level ``arviz`` package."""

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname != "arviz":
            return None
        for finder in sys.meta_path:
            if finder is cls or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _Loader(spec.loader)
        return spec


def install() -> None:
    """Put the finder first on ``sys.meta_path`` unless ArviZ is imported already."""
    if "arviz" not in sys.modules and _Finder not in sys.meta_path:
        sys.meta_path.insert(0, _Finder)
