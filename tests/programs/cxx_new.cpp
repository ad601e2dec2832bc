// `cxx_new N`: N rounds of C++ allocations, each round 5 news and 5
// deletes of every kind (plain, array, nothrow, aligned, sized): jemalloc,
// tcmalloc and mimalloc define operator new and delete themselves, so the
// shim must see them there as it sees malloc and free.
// `cxx_new N throw`: then a new that cannot succeed, its std::bad_alloc
// caught (thrown through the shim's operator new), and a nothrow one.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <new>

struct alignas(256) Wide {
	char bytes[256];
};

// Each pointer escapes, or the compiler may leave out a new/delete pair.
static void *volatile seen;
template <typename T> static T *keep(T *p)
{
	seen = p;
	return p;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? std::atol(argv[1]) : 1;
	for (long r = 0; r < rounds; r++) {
		int *one = keep(new int(1));
		char *many = keep(new char[1000]);
		char *maybe = keep(new (std::nothrow) char[200000]);
		Wide *wide = keep(new Wide);
		Wide *wides = keep(new Wide[4]);
		delete one;
		delete[] many;
		delete[] maybe;
		delete wide;
		delete[] wides;
	}
	if (argc > 2 && std::string(argv[2]) == "throw") {
		try {
			seen = new char[std::size_t(1) << 62];
			std::puts("no bad_alloc");
		} catch (const std::bad_alloc &) {
			std::puts("bad_alloc caught");
		}
		char *none = new (std::nothrow) char[std::size_t(1) << 62];
		std::puts(none ? "nothrow: a block" : "nothrow: null");
	}
	return 0;
}
