"""Synthesizers: ``fit(df, quasi_identifiers=...)`` then ``sample(m, random_state=...)``."""
from .base import Synthesizer

__all__ = ["Synthesizer"]
