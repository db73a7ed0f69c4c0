"""Framework adapters, one module per framework; none imports its framework at module scope.

Enable them with :func:`openprogram.instrument`.
"""
