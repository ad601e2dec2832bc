// nested_vectors: a table of small vectors built and dropped each round,
// each row grown one push_back at a time: millions of small new/delete
// pairs and nothing given back to the kernel.  glibc's code on each call
// takes about twice mimalloc's CPU (bare, 100 rounds: 0.60 s against
// 0.32 s here), which no churn explains: allocator-time.
//
//   nested_vectors [ROUNDS]
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? std::atoi(argv[1]) : 100;
	long sum = 0;
	for (int r = 0; r < rounds; r++) {
		std::vector<std::vector<int>> rows;
		for (int i = 0; i < 64000; i++) {
			std::vector<int> row;
			for (int k = 0; k <= i % 7; k++)
				row.push_back(i + k); /* the rows' vectors */
			rows.push_back(std::move(row));
		}
		for (const auto &row : rows)
			sum += row[0];
	}
	std::printf("%ld\n", sum);
	return 0;
}
