"""linkscope: how the GPUs in a node are really linked, what the links deliver, and where ranks go.

Importing linkscope imports no vendor library (CuPy, pynvml, mpi4py): backends load lazily.
"""
__version__ = "0.1.0"
