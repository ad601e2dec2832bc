"""Large blocks allocated by Python code that C code called back: map's,
sorted's key, a NumPy ufunc made by frompyfunc (np.ones, not np.zeros:
NumPy lets go of the GIL around the calloc of a large zeroed array, and
the shim reads Python frames only where the GIL is held)."""
import numpy as np


def f(i):
    return bytearray(1 << 20)


def g(i):
    return float(np.ones(1 << 17).sum())


def main():
    list(map(f, range(3)))
    sorted(range(3), key=g)
    np.frompyfunc(g, 1, 1)(np.arange(3))


main()
