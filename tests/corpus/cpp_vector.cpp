// A control: a vector grown by push_back to 16 M doubles (each growth a
// bigger block, the old one dropped: growth, not churn), and a map of a
// million entries.
#include <cstdio>
#include <map>
#include <vector>

int main()
{
	std::vector<double> v;
	for (int i = 0; i < 16 * 1024 * 1024; i++)
		v.push_back(i * 0.5);
	std::map<int, int> m;
	for (int i = 0; i < 1000000; i++)
		m[i * 7] = i;
	double s = 0;
	for (double x : v)
		s += x;
	std::printf("%.0f %zu\n", s, m.size());
	return 0;
}
