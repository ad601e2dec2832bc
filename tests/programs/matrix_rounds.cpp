// matrix_rounds [ROUNDS]: two matrices of some 24 MiB as vectors of rows
// made each round, the row size cycling from 100 KiB to 8 MiB (new-user
// trial 29).  Many rows are live at once and each round's first row is
// larger than the last round's, but every row is made at its size and
// freed before the next round's are made: no buffer grown.
#include <cstdio>
#include <cstdlib>
#include <vector>

typedef std::vector<std::vector<double>> Matrix;

static Matrix make(size_t rows, size_t cols, double seed)
{
	Matrix m(rows, std::vector<double>(cols));
	for (size_t i = 0; i < rows; i++)
		for (size_t j = 0; j < cols; j += 8)
			m[i][j] = seed + (double)i - (double)j;
	return m;
}

static double reduce(const Matrix &m)
{
	double s = 0;
	for (const auto &row : m)
		for (size_t j = 0; j < row.size(); j += 8)
			s += row[j];
	return s;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? std::atoi(argv[1]) : 60;
	static const size_t cols[] = {12800, 40000, 131072, 262144, 1048576};
	double total = 0;
	for (int it = 0; it < rounds; it++) {
		size_t n = cols[it % 5];
		size_t rows = ((size_t)24 << 20) / (n * 8);
		if (rows < 2)
			rows = 2;
		Matrix a = make(rows, n, it);
		Matrix b = make(rows, n, -it);
		total += reduce(a) - reduce(b);
	}
	std::printf("total %.3f\n", total);
	return 0;
}
