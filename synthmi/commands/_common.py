"""Helpers shared by CLI verbs."""
from __future__ import annotations

import argparse

EXAMPLES_FMT = argparse.RawDescriptionHelpFormatter


def split_list(text: str | None) -> list[str]:
    """``"a,b , c"`` -> ``["a", "b", "c"]`` (empty or None -> [])."""
    if not text:
        return []
    return [t.strip() for t in text.split(",") if t.strip()]


def parse_assignments(items: list[str] | None, name: str) -> dict[str, str]:
    """``["age=2", "bmi=0.5"]`` -> ``{"age": "2", "bmi": "0.5"}``."""
    out: dict[str, str] = {}
    for item in items or []:
        for part in split_list(item):
            if "=" not in part:
                raise ValueError(f"The '--{name}' option takes COLUMN=VALUE pairs. Got {part!r} instead.")
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def progress_enabled(args: argparse.Namespace) -> bool:
    return not getattr(args, "quiet", False)


def add_common_flags(p: argparse.ArgumentParser) -> None:
    """``--quiet`` on a verb too (``synthmi VERB --quiet``); SUPPRESS keeps a
    top-level ``synthmi --quiet VERB`` from being overwritten by the default."""
    p.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS, help="no progress output")
