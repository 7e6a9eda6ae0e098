"""The package version, in a module of its own so that any module may import it without the package."""

__all__ = ["__version__"]

__version__ = "0.1.0"
