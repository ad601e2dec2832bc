// A vector of 32 MiB made, read and dropped each round, built without
// optimization (-O0, a debug build): std::vector's constructor, its
// allocator and its destructor are out-of-line functions of the program
// itself, six frames between the program's line and the allocator.
//
//   debug_vectors ROUNDS
#include <cstdio>
#include <cstdlib>
#include <vector>

static double round_of(int round)
{
	std::vector<double> v(4 << 20, round);
	double sum = 0;
	for (size_t i = 0; i < v.size(); i += 512)
		sum += v[i];
	return sum;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? std::atoi(argv[1]) : 40;
	double sum = 0;
	for (int r = 0; r < rounds; r++)
		sum += round_of(r);
	std::printf("%g\n", sum);
}
