// `report [REQUESTS]`: each request renders a text report of some 1.5 MiB
// into a std::ostringstream (its buffer grown step by step) and copies it
// out with str(), a block of its own; the string returned is freed at the
// end of the request, the stream's buffer before it.  glibc trims the heap
// after each request: the memory of both blocks, though only the last free
// sets the trim off.
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

static std::string render(int request)
{
	std::ostringstream os;
	for (int i = 0; i < 30000; i++)
		os << "row " << i << " req=" << request << " value="
		   << (i * 17 + request) % 1000 << '\n';
	return os.str();
}

int main(int argc, char **argv)
{
	int requests = argc > 1 ? std::atoi(argv[1]) : 150;
	std::size_t total = 0;
	for (int r = 0; r < requests; r++) {
		std::string s = render(r);
		total += s.size() + static_cast<unsigned char>(s[s.size() / 2]);
	}
	std::printf("%zu\n", total);
	return 0;
}
