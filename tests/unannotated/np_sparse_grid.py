# A heat map per frame: a fresh grid of 64 MiB from np.zeros, a few
# thousand detections added into one window of 256 x 256 cells, the
# window summarised.  np.zeros is calloc: on glibc each grid is a fresh
# mapping, zeroed by the kernel, of which only the window's pages are
# touched; an allocator that keeps the freed grid must zero all of it for
# the next calloc.  (New-user trial 45's heat map.)
import sys

import numpy as np


def frame(rng, rows=4096, cols=2048):
    grid = np.zeros((rows, cols))
    r0, c0 = rng.integers(0, rows - 256), rng.integers(0, cols - 256)
    ys = rng.integers(r0, r0 + 256, 5000)
    xs = rng.integers(c0, c0 + 256, 5000)
    np.add.at(grid, (ys, xs), 1.0)
    window = grid[r0:r0 + 256, c0:c0 + 256]
    return float(window.max()), int(np.count_nonzero(window))


rng = np.random.default_rng(1)
frames = int(sys.argv[1]) if len(sys.argv) > 1 else 100
print("nonzero cells", sum(frame(rng)[1] for _ in range(frames)))
