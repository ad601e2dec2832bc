import numpy as np, timeit
a = np.random.randint(0, 255, 1_000_000, dtype=np.uint8)
def func1(a): return a.astype(np.float64) / 255.0
def func2(a):
    t = a.astype(np.float64)
    return t / 255.0
print("func1", min(timeit.repeat(lambda: func1(a), number=1, repeat=300)))
print("func2", min(timeit.repeat(lambda: func2(a), number=1, repeat=300)))
