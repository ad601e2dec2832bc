// Four worker threads index generated documents: each document's words
// are counted in a std::unordered_map<std::string, int> made for it, then
// merged into the thread's own index, and the document's map dropped.
// Words are 3 to 24 letters (longer than 15 leave std::string's inline
// buffer and take a block of their own).  Ordinary C++: nothing given back
// to the kernel between documents but what the allocator decides.
//
//   cpp_word_index [DOCUMENTS_PER_THREAD]
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

static std::string word(unsigned &s)
{
	s = s * 1103515245u + 12345u;
	unsigned len = 3 + (s >> 16) % 22;
	std::string w;
	for (unsigned i = 0; i < len; i++) {
		s = s * 1103515245u + 12345u;
		w.push_back('a' + (s >> 16) % 6);
	}
	return w;
}

static void index_documents(int id, int documents, size_t *distinct)
{
	std::unordered_map<std::string, long> index;
	unsigned s = 7u + id;
	for (int d = 0; d < documents; d++) {
		std::unordered_map<std::string, int> counts;
		for (int i = 0; i < 2000; i++)
			counts[word(s)]++;
		for (auto &kv : counts)
			index[kv.first] += kv.second;
	}
	*distinct = index.size();
}

int main(int argc, char **argv)
{
	int documents = argc > 1 ? atoi(argv[1]) : 150;
	std::vector<std::thread> workers;
	size_t distinct[4];
	for (int t = 0; t < 4; t++)
		workers.emplace_back(index_documents, t, documents, &distinct[t]);
	for (auto &w : workers)
		w.join();
	printf("distinct words per thread: %zu %zu %zu %zu\n", distinct[0],
	       distinct[1], distinct[2], distinct[3]);
	return 0;
}
