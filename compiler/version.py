"""The compiler's version (a module of its own: submodules read it without importing the package)."""
__version__ = "0.1.0"
