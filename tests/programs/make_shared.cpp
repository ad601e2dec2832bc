// Large vectors made by std::make_shared, whose allocation is a dozen C++
// library templates deep, all inlined into the program's function:
// `make_shared ROUNDS` makes ROUNDS tiles in load_tile().
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

static std::shared_ptr<std::vector<float>> load_tile(int i)
{
	auto t = std::make_shared<std::vector<float>>(512 * 1024);
	(*t)[i % 1000] = 1.0f;
	return t;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 50;
	double s = 0;
	for (int i = 0; i < rounds; i++)
		s += (*load_tile(i))[5];
	printf("%f\n", s);
	return 0;
}
