// new_pairs: time new char[size] + delete[] pairs, the C++ way to get a
// block: the allocator's caller is operator new, not the program, so a
// shim that names the code behind a block must look past it.
//
//   new_pairs [--iterations N] SIZE
//
// Prints "size=S ns_per_pair=X" (the loop's wall time over N).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

static void *volatile seen; // each block escapes: no pair is left out

int main(int argc, char **argv)
{
	long iterations = 200000;
	size_t size = 1 << 20;
	for (int i = 1; i < argc; i++) {
		if (!std::strcmp(argv[i], "--iterations") && i + 1 < argc)
			iterations = std::atol(argv[++i]);
		else
			size = std::strtoull(argv[i], nullptr, 10);
	}
	if (iterations < 1 || size < 1) {
		std::fprintf(stderr, "usage: new_pairs [--iterations N] SIZE\n");
		return 2;
	}
	for (long i = 0; i < iterations / 64 + 1; i++) { // warm up
		char *p = new char[size];
		seen = p;
		delete[] p;
	}
	auto start = std::chrono::steady_clock::now();
	for (long i = 0; i < iterations; i++) {
		char *p = new char[size];
		p[0] = 1;
		seen = p;
		delete[] p;
	}
	std::chrono::duration<double, std::nano> ns =
		std::chrono::steady_clock::now() - start;
	std::printf("size=%zu ns_per_pair=%.2f\n", size, ns.count() / iterations);
	return 0;
}
