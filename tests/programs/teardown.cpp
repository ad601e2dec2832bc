// `teardown [KEYS]`: an index whose working set only grows: a std::map
// from string keys to vectors of ints, KEYS keys (default 500,000) added
// one after another, each vector grown by push_back (its old buffers
// freed as it doubles), older ones too, some 130 MiB at the end; then
// main returns and the map's destructor frees it all, in the last few
// tens of milliseconds.  Nothing is freed and kept while the program
// runs: the allocator holds the memory only during that teardown.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

int main(int argc, char **argv)
{
	long keys = argc > 1 ? std::atol(argv[1]) : 500000;
	std::map<std::string, std::vector<int>> index;
	std::vector<std::vector<int> *> added; // for older keys, by number
	std::uint64_t rng = 88172645463325252ull, sum = 0;
	for (long k = 0; k < keys; k++) {
		std::vector<int> &v = index["record-" + std::to_string(k * 7919) +
					    "-of-the-index"];
		added.push_back(&v);
		for (int i = 0; i < 20; i++)
			v.push_back((int)(k + i));
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		std::vector<int> &older = *added[rng % added.size()];
		for (int i = 0; i < 4; i++)
			older.push_back((int)k);
		sum += v.size() + older.size();
	}
	std::printf("%zu keys, %llu\n", index.size(), (unsigned long long)sum);
	return 0;
}
