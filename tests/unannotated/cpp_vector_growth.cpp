// Load a few million samples into a vector (grown by push_back), compute
// some statistics, and keep a small word index in a std::map.  Done for a
// few "files" in a row.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

static double load_and_summarize(int file, std::map<std::string, int> &index)
{
	std::vector<double> samples;
	unsigned long x = 12345 + file;
	for (int i = 0; i < 3000000; i++) {
		x = x * 6364136223846793005ul + 1442695040888963407ul;
		samples.push_back(std::sin((double)(x >> 40)) * 100.0);
	}

	double mean = 0;
	for (double s : samples)
		mean += s;
	mean /= samples.size();

	std::string text;
	for (int i = 0; i < 60000; i++) {
		std::string word = "w" + std::to_string((i * 7919 + file) % 20000);
		text += word;
		text += ' ';
		index[word] += 1;
	}

	std::nth_element(samples.begin(), samples.begin() + samples.size() / 2,
			 samples.end());
	return mean + samples[samples.size() / 2] + text.size() * 1e-9;
}

int main()
{
	std::map<std::string, int> index;
	double total = 0;
	for (int file = 0; file < 4; file++)
		total += load_and_summarize(file, index);
	std::printf("total %.6f, %zu words\n", total, index.size());
	return 0;
}
