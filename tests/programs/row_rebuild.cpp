// row_rebuild: a table of 2,000 rows of 300 doubles, each row grown one
// push_back at a time, built and dropped each round.  glibc trims the heap
// twice a round, some 4 MiB each time, but the whole table, 8 MiB, comes
// free at once: a trim threshold of twice the mean trim (8 MiB) still
// left 121 trims (new-user trial 21).
//
//   row_rebuild [ROUNDS]
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? std::atoi(argv[1]) : 300;
	double sum = 0;
	for (int r = 0; r < rounds; r++) {
		std::vector<std::vector<double>> table;
		int rows = 2000 + (r % 5) * 10;
		for (int i = 0; i < rows; i++) {
			std::vector<double> row;
			for (int c = 0; c < 300; c++)
				row.push_back(i * 0.5 + c + r); // the rows' buffers
			table.push_back(std::move(row));
		}
		for (const auto &row : table)
			sum += row[row.size() / 2];
	}
	std::printf("%.1f\n", sum);
	return 0;
}
