"""Three large arrays made once and kept to the end, beside a loop whose
temporary is mapped and unmapped each call (glibc maps blocks past its
largest threshold, 32 MiB): the arrays' unmappings at exit are no churn."""
import sys

import numpy as np

kept = [np.full(10_000_000, float(k)) for k in range(3)]  # the kept arrays


def step(x):
    t = x * 2.0  # the temporary
    return t.sum()


x = np.ones(5_000_000)
total = 0.0
for i in range(int(sys.argv[1]) if len(sys.argv) > 1 else 60):
    total += step(x)
print(total + sum(a[0] for a in kept))
