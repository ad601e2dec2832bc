"""A table grown by np.concatenate, 500 rows of 64 floats a step, to 29
MiB, rebuilt each epoch (new-user trial 8): each step a new block larger
than the last, the old one freed.

    np_table_concat.py [EPOCHS]
"""
import sys

import numpy as np

epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 6
tot = 0.0
for e in range(epochs):
    table = np.zeros((0, 64))
    for step in range(120):
        batch = np.full((500, 64), float(step + e))
        table = np.concatenate((table, batch), axis=0)
    tot += table.sum()
print(tot)
