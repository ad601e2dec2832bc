# Image-like processing (new-user trial 37): an image made float, padded,
# blurred by shifted sums, shuffled by fancy indexing, concatenated and
# clipped back each step: temporaries of 6 and 12 MB at five lines of the
# top level, up to five live at once.
import numpy as np, sys
rng = np.random.default_rng(1)
img = rng.integers(0, 256, size=(1024, 1536), dtype=np.uint8)   # 1.5 MB
acc = 0.0
for step in range(40):
    f = img.astype(np.float32)                       # 6 MB
    p = np.pad(f, 8, mode="reflect")                 # ~6.3 MB
    blur = (p[:-16, 8:-8] + p[16:, 8:-8] + p[8:-8, :-16] + p[8:-8, 16:]) * 0.25   # temps 6 MB each
    idx = rng.permutation(blur.shape[0])
    shuf = blur[idx]                                 # fancy index copy 6 MB
    both = np.concatenate([shuf, blur], axis=1)      # 12 MB
    img = np.clip(both[:, ::2], 0, 255).astype(np.uint8)
    acc += float(both.mean())
print(f"{acc:.3f}")
