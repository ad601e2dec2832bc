/* Small blocks' sites, sampled: where the many blocks below MT_LARGE_BYTES
 * come from costs a stack each, too much for every one, so the thread's
 * allocated bytes are cut at random points, one every `rate` bytes on
 * average (a Poisson process over the bytes, as heap profilers sample),
 * and the block that holds a point has its site taken.  A block of s
 * bytes is then sampled with probability 1 - e^(-s/rate), and each sample
 * stands for s over that probability: the sites' estimated bytes add up
 * to the small bytes allocated, whatever the sizes.
 *
 * How close the sites' shares come rests on how many samples there are,
 * not on how dense they are: a thousand put them within a few percent
 * (docs/explain.md).  Past that, more only cost: at 64 KiB a block, one
 * pair in 8 took a stack at the default rate (some 640 instructions a
 * sample, 5-8 ns a pair).  So each STEP_SAMPLES samples of a thread
 * double its interval, up to MAX_SHIFT times (4 MiB from 512 KiB), unless
 * the rate was set (MEMTRACE_SITES=sample:BYTES).  A sample stands for
 * its size over its chance at the rate its point was drawn at, so the
 * estimates stay unbiased: a Poisson process whose rate changes only at
 * its points is one at each rate between them. */
#include <stdint.h>
#include <string.h>

#include "options.h"
#include "probe.h"
#include "rss.h"
#include "sites.h"

/* How often a thread looks again while no rate is set (sites off, or not
 * started yet): one call per so many bytes allocated. */
#define RECHECK_BYTES (1u << 20)
#define STEP_SAMPLES 1024
#define MAX_SHIFT 3

static uint64_t rate;
static uint8_t max_shift;
/* the most any thread has stepped up */
static uint8_t shift_reached;

void mt_small_sites_start(uint64_t sample_bytes, bool fixed)
{
	rate = sample_bytes;
	max_shift = fixed ? 0 : MAX_SHIFT;
}

uint64_t mt_small_sites_rate_max(void)
{
	return rate << __atomic_load_n(&shift_reached, __ATOMIC_RELAXED);
}

void mt_small_sites_reset_after_fork(void)
{
	shift_reached = 0;
}

/* The thread's mean interval now. */
static uint64_t rate_of(const struct mt_thread *t)
{
	return rate << t->sample_shift;
}

/* Another sample of the thread: its interval doubles after each
 * STEP_SAMPLES, up to max_shift times. */
static void count_sample(struct mt_thread *t)
{
	if (++t->samples_taken % STEP_SAMPLES || t->sample_shift >= max_shift)
		return;
	uint8_t shift = ++t->sample_shift;
	t->sample_weight_of = 0; /* (weighed at the old rate) */
	uint8_t was = __atomic_load_n(&shift_reached, __ATOMIC_RELAXED);
	while (was < shift &&
	       !__atomic_compare_exchange_n(&shift_reached, &was, shift, true,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* xorshift64*: no lock, no libc state (rand() takes a lock a signal
 * handler's malloc may find taken). */
static uint64_t next_random(struct mt_thread *t)
{
	uint64_t x = t->sample_rng;
	if (!x)
		x = (uintptr_t)t ^ t->c.allocated ^ 0x9e3779b97f4a7c15ull;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	t->sample_rng = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* 1/k, for the series below: a multiplication where a division was. */
static const double reciprocal[18] = {
	0,	    1,		1.0 / 2,  1.0 / 3,  1.0 / 4,  1.0 / 5,
	1.0 / 6,  1.0 / 7,  1.0 / 8,  1.0 / 9,  1.0 / 10, 1.0 / 11,
	1.0 / 12, 1.0 / 13, 1.0 / 14, 1.0 / 15, 1.0 / 16, 1.0 / 17,
};

/* ln(x) for x > 0, without libm and without a division: x = m 2^e with m
 * in [sqrt(1/2), sqrt(2)) read off its bits, and ln(m) = t q(t), t = m - 1,
 * q a polynomial of degree 6 (a least-squares fit of ln(1 + t) / t on
 * Chebyshev nodes; within 1e-6 of ln(m), half a byte of a 512 KiB
 * interval, and 0 at m = 1).  Evaluated by Estrin's scheme, whose products
 * do not wait on each other, where the series of atanh it replaces was a
 * division then seven dependent steps: some 1.7 ns less a sample, of ~40
 * (malloc_pairs 65536, CPU time, 0.2 ns a pair: one in 8.5 is sampled). */
static double log_of(double x)
{
	static const double q[7] = {
		1.0000006974163933,   -0.50000735468021307, 0.33317934085800388,
		-0.24929505312970493, 0.20455417963334355,  -0.18455820810704524,
		0.11784417356600753,
	};
	uint64_t bits;
	memcpy(&bits, &x, sizeof bits);
	int e = (int)((bits >> 52) & 0x7ff) - 1023;
	bits = (bits & ~(0x7ffull << 52)) | (1023ull << 52);
	double m;
	memcpy(&m, &bits, sizeof m);
	if (m > 1.41421356237309504880) {
		m *= 0.5;
		e++;
	}
	double t = m - 1, t2 = t * t, t4 = t2 * t2;
	double poly = (q[0] + q[1] * t) + t2 * (q[2] + q[3] * t) +
		      t4 * ((q[4] + q[5] * t) + t2 * q[6]);
	return t * poly + e * 0.69314718055994530942;
}

/* 1 - e^(-x) for x > 0: for x below 1 its series in Horner's form, whose
 * 1/k are constants (no cancellation for small x); above, from e^(-x) =
 * e^(-n) e^(-f). */
static double one_minus_exp_minus(double x)
{
	if (x < 1) {
		double sum = 1;
		for (int k = 17; k >= 2; k--)
			sum = 1 - x * reciprocal[k] * sum;
		return x * sum;
	}
	double whole = 1;
	for (; x >= 1; x -= 1) {
		whole *= 0.36787944117144232160;
		if (whole < 1e-30)
			return 1;
	}
	return 1 - whole * (1 - one_minus_exp_minus(x));
}

/* The bytes to the next point: exponential with mean `rate`. */
static uint64_t interval(struct mt_thread *t)
{
	/* (u in (0, 1]: 53 random bits, plus one) */
	double u = (double)((next_random(t) >> 11) + 1) / 9007199254740992.0;
	return (uint64_t)(-log_of(u) * (double)rate_of(t));
}

/* The bytes a sampled block of s bytes stands for.  The thread keeps its
 * last size's: a loop samples one size over and over, and the series took
 * some 130 instructions a sample (forgotten when the rate steps up). */
static double weight(struct mt_thread *t, size_t s)
{
	if (s == t->sample_weight_of)
		return t->sample_weight;
	double x = (double)s / (double)rate_of(t);
	t->sample_weight = x > 40 ? (double)s : (double)s / one_minus_exp_minus(x);
	t->sample_weight_of = s;
	return t->sample_weight;
}

__attribute__((noinline)) void *
mt_sample_then_return(struct mt_thread *t, void *p, size_t usable,
		      const void *caller)
{
	uint64_t allocated = t->c.allocated;
	/* (a draw from here on is as good as the one it replaces: the
	 * points are memoryless) */
	if (__builtin_expect(t->rss_after_fall, 0))
		mt_rss_after_fall(t, usable);
	bool armed = t->sample_at != 0;
	if (!rate)
		t->sample_at = allocated + RECHECK_BYTES;
	else {
		/* (a large block has a site of its own, exactly; a size not
		 * known, 0, stands for nothing) */
		bool take = armed && p && usable && usable < MT_LARGE_BYTES;
		/* (weighed at the rate that drew the point, before a step) */
		double stands_for = take ? weight(t, usable) : 0;
		if (take)
			count_sample(t);
		t->sample_at = allocated + interval(t);
		if (take)
			mt_site_sample(p, usable, caller, stands_for);
	}
	int64_t live = (int64_t)(allocated - t->c.freed);
	if (live > t->live_mark)
		mt_peak_check(t, live);
	return p;
}
