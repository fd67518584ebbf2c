"""Render an HTML file in headless Chromium: a screenshot and the console log.

Used by the browser test of the report and to make the committed screenshot
of its first screen. Chromium writes page console messages to its log as
``...:INFO:CONSOLE:<line>] "message", source: <url> (<line>)`` when started
with ``--enable-logging=stderr --v=0``; the report has no scripts, so *any*
console line is a fault.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputNotFound

__all__ = ["find_chromium", "render", "RenderResult", "png_pixel_std"]

#: the flags that keep a headless run quiet and offline-safe in CI containers
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--enable-logging=stderr",
    "--v=0",
]
_CONSOLE = re.compile(r":CONSOLE(?::\d+)?\]\s*(.*)")


def find_chromium() -> str | None:
    """Path of a Chromium/Chrome binary on PATH, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


@dataclass
class RenderResult:
    screenshot: Path
    console: list[str]
    returncode: int
    log: str


def render(html_path: str | Path, screenshot: str | Path, width: int = 1280, height: int = 900,
           timeout: float = 90.0, chromium: str | None = None) -> RenderResult:
    """Load ``html_path`` in headless Chromium, save a screenshot, collect console messages."""
    exe = chromium or find_chromium()
    if exe is None:
        raise InputNotFound("No Chromium binary found on PATH (install the Debian package 'chromium').",
                            parameter="chromium", owner="render")
    html_path = Path(html_path).resolve()
    screenshot = Path(screenshot).resolve()
    with tempfile.TemporaryDirectory(prefix="synthmi-chromium-") as profile:
        cmd = [exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}",
               f"--screenshot={screenshot}", html_path.as_uri()]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    log = proc.stderr + proc.stdout
    console = [m.group(1) for m in map(_CONSOLE.search, log.splitlines()) if m]
    return RenderResult(screenshot=screenshot, console=console, returncode=proc.returncode, log=log)


def png_pixel_std(path: str | Path) -> float:
    """Standard deviation of the grey levels of a PNG (0 for a blank image)."""
    import matplotlib.image as mpimg

    img = np.asarray(mpimg.imread(str(path)), dtype=float)
    grey = img[..., :3].mean(axis=-1) if img.ndim == 3 else img
    return float(grey.std())
