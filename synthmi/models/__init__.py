"""Synthesizers: ``fit(df, quasi_identifiers=...)`` then ``sample(m, random_state=...)``."""
from .base import Synthesizer
from .cart import CartSynthesizer

__all__ = ["Synthesizer", "CartSynthesizer"]
