# (new-user trial 36: both workers churn; allocator-time counted one)
# Parallel simulation: a multiprocessing Pool runs independent particle
# simulations; each logs its state with np.vstack every step.
import numpy as np, sys
from multiprocessing import Pool

def simulate(seed):
    rng = np.random.default_rng(seed)
    pos = rng.standard_normal(3000); vel = rng.standard_normal(3000) * 0.01
    history = np.empty((0, 3000))
    for t in range(250):
        vel -= 0.001 * pos; pos += vel
        history = np.vstack([history, pos])
    return float(history[-1].sum())

def main():
    tasks = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    with Pool(2) as p:
        print("sum", round(sum(p.map(simulate, range(tasks))), 6))

if __name__ == "__main__":
    main()
