// line_batches: log lines formatted into a vector of strings, 5,000 to a
// batch, the vector emptied and shrunk after each (new-user trial 23).  It
// grows by doubling each batch: only its last two steps, 128 and 256 KiB,
// are large blocks, two live at once while the elements move.
//
//   line_batches [LINES]
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char **argv)
{
	int lines = argc > 1 ? std::atoi(argv[1]) : 600000;
	std::vector<std::string> batch;
	size_t bytes = 0;
	for (int i = 0; i < lines; i++) {
		batch.push_back("line " + std::to_string(i) + " status=ok"); // grows
		if (batch.size() == 5000) {
			for (const auto &s : batch)
				bytes += s.size();
			batch.clear();
			batch.shrink_to_fit();
		}
	}
	std::printf("%zu\n", bytes);
	return 0;
}
