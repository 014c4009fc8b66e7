"""Version of dpinfer."""

__version__ = "0.1.0"
