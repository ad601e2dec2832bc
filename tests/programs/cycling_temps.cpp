// cycling_temps [ROUNDS]: a function that makes two vector<double>
// temporaries of n doubles, n cycling 1, 2, ... 8 MiB and again (new-user
// trial 9): seven in eight blocks larger than the one before, yet each
// block sized once and freed before the next: no buffer grown.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

static double smooth(const std::vector<double> &in, size_t n)
{
	std::vector<double> tmp(n);
	for (size_t i = 1; i + 1 < n; ++i)
		tmp[i] = (in[i - 1] + in[i] + in[i + 1]) / 3.0;
	std::vector<double> out(tmp.begin(), tmp.end());
	double s = 0;
	for (size_t i = 0; i < n; i += 64)
		s += out[i];
	return s;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? std::atoi(argv[1]) : 400;
	std::vector<double> base(1 << 20);
	for (size_t i = 0; i < base.size(); ++i)
		base[i] = std::sin((double)i * 0.001);
	double acc = 0;
	for (int it = 0; it < rounds; ++it)
		acc += smooth(base, (size_t)131072 * (1 + it % 8));
	std::printf("%.3f\n", acc);
	return 0;
}
