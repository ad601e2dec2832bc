// `cxx_new N`: N rounds of C++ allocations, each round 5 news and 5
// deletes of every kind (plain, array, nothrow, aligned, sized): jemalloc,
// tcmalloc and mimalloc define operator new and delete themselves, so the
// shim must see them there as it sees malloc and free.
#include <cstdlib>
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
	return 0;
}
