"""Smoothing steps on a 20 MB signal, each making new temporaries (new-user
trial 11): glibc's heap grows by some 34 MiB a step and is trimmed back.
NumPy advises its arrays for transparent huge pages, so where the kernel
gives them (THP "madvise" or "always") the regrown memory faults once a
2 MiB page and the fault count looks like first touch alone.
`np_smooth_steps.py [STEPS]`"""
import sys

import numpy as np

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
x = np.random.default_rng(3).standard_normal(2_500_000)
for step in range(steps):
    y = (x[:-2] + 2.0 * x[1:-1] + x[2:]) / 4.0  # the step's temporaries
    x = np.concatenate(([x[0]], y, [x[-1]]))
    x = x - x.mean()
print(round(float(np.abs(x).sum()), 6))
