# A working set held to the end: twenty arrays of 8 MB, then a few
# seconds of arithmetic done in place on them, then exit.  Nothing is
# freed before the interpreter's teardown frees all of it, just before
# exit, while the allocator may still hold it: no memory is kept that the
# program pays for, and no temporaries churn.
import numpy as np

arrays = [np.random.default_rng(i).standard_normal(1_000_000)
          for i in range(20)]
for step in range(60):
    for a in arrays:
        a *= 1.0001
        a += 0.5
print(f"{sum(float(a.sum()) for a in arrays):.6e}")
