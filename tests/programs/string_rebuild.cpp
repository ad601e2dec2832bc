// string_rebuild [ROUNDS] [PIECES]: a string built by s = s + piece, a
// new string each step (the old one freed), past 1 MiB: the live bytes
// go up by the size of s and back down at every step.
#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? std::atoi(argv[1]) : 2;
	int pieces = argc > 2 ? std::atoi(argv[2]) : 40000;
	size_t total = 0;
	for (int r = 0; r < rounds; r++) {
		std::string s;
		for (int i = 0; i < pieces; i++)
			s = s + "piece-" + std::to_string(i) + ";";
		total += s.size();
	}
	std::printf("%zu\n", total);
	return 0;
}
