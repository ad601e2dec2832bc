# Band-pass by FFT, each step (new-user trial 10; tests/traces/np-fft-sites.mt: its trace).
import numpy as np, sys
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 25
n = 1 << 21
rng = np.random.default_rng(0)
sig = rng.standard_normal(n)
freqs = np.fft.rfftfreq(n, d=1e-3)
acc = 0.0
for s in range(steps):
    x = sig * (1.0 + 0.01 * s)
    X = np.fft.rfft(x)
    X = np.where((freqs > 5) & (freqs < 50 + s), X, 0)
    y = np.fft.irfft(X, n)
    acc += float(np.abs(y).mean())
print("%.6f" % acc)
