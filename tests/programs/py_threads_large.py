"""Large blocks made in a thread: `py_threads_large.py`.  Each of two
threads makes and drops 20 bytearrays of 1 MiB in fill()."""
import threading


def fill(n):
    for _ in range(n):
        b = bytearray(1 << 20)
        b[-1] = 1


threads = [threading.Thread(target=fill, args=(20,)) for _ in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
