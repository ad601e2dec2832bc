"""Scale 8-bit samples to [0, 1] as floats, reusing preallocated buffers."""
import numpy as np

rng = np.random.default_rng(1)
a = rng.integers(0, 255, 1_000_000, dtype=np.uint8)
scaled = np.empty(a.shape, dtype=np.float64)
acc = np.zeros(a.shape, dtype=np.float64)

for i in range(600):
    np.copyto(scaled, a, casting="unsafe")
    np.divide(scaled, 255.0, out=scaled)
    np.add(acc, scaled, out=acc)
print("mean", acc.mean() / 600)
