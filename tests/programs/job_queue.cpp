// job_queue: a std::deque as a FIFO of jobs of 248 bytes, its length swinging
// between 1,000 and 201,000 every 100,000 jobs: glibc's heap grows and is
// trimmed as the queue's 512-byte chunks come and go (small blocks), and
// the deque's map of chunks, above 128 KiB, is reallocated now and then,
// hundreds of milliseconds apart (new-user trial 21).
//
//   job_queue [JOBS]
#include <cstdio>
#include <cstdlib>
#include <deque>

struct Job {
	long id;
	double w[30];
};

int main(int argc, char **argv)
{
	long n = argc > 1 ? std::atol(argv[1]) : 100000000;
	std::deque<Job> q;
	double acc = 0;
	for (long i = 0; i < n; i++) {
		q.push_back(Job{i, {i * 1.0, 1, 2, 3, 4, 5}}); // the chunks
		long target = 1000 + (i / 100000 % 2) * 200000;
		while ((long)q.size() > target) {
			acc += q.front().w[0];
			q.pop_front();
		}
	}
	std::printf("%.0f %zu\n", acc, q.size());
	return 0;
}
