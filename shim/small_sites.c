/* Small blocks' sites, sampled: where the many blocks below MT_LARGE_BYTES
 * come from costs a stack each, too much for every one, so the thread's
 * allocated bytes are cut at random points, one every `rate` bytes on
 * average (a Poisson process over the bytes, as heap profilers sample),
 * and the block that holds a point has its site taken.  A block of s
 * bytes is then sampled with probability 1 - e^(-s/rate), and each sample
 * stands for s over that probability: the sites' estimated bytes add up
 * to the small bytes allocated, whatever the sizes. */
#include <stdint.h>

#include "options.h"
#include "probe.h"
#include "rss.h"
#include "sites.h"

/* How often a thread looks again while no rate is set (sites off, or not
 * started yet): one call per so many bytes allocated. */
#define RECHECK_BYTES (1u << 20)

static uint64_t rate;

void mt_small_sites_start(uint64_t sample_bytes)
{
	rate = sample_bytes;
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

/* ln(x) for x > 0, without libm: x = m 2^e with m in [1, 2), and ln(m)
 * from the series of atanh((m - 1) / (m + 1)) (error below 1e-6). */
static double log_of(double x)
{
	int e = 0;
	while (x >= 2) {
		x /= 2;
		e++;
	}
	while (x < 1) {
		x *= 2;
		e--;
	}
	double y = (x - 1) / (x + 1), y2 = y * y, sum = 0, term = y;
	for (int k = 1; k < 20; k += 2) {
		sum += term / k;
		term *= y2;
	}
	return 2 * sum + e * 0.69314718055994530942;
}

/* e^(-x) for x >= 0: e^(-n) by multiplying, e^(-f) by its series. */
static double exp_minus(double x)
{
	double whole = 1;
	for (; x >= 1; x -= 1) {
		whole *= 0.36787944117144232160;
		if (whole < 1e-30)
			return 0;
	}
	double sum = 1, term = 1;
	for (int k = 1; k < 12; k++) {
		term *= -x / k;
		sum += term;
	}
	return whole * sum;
}

/* The bytes to the next point: exponential with mean `rate`. */
static uint64_t interval(struct mt_thread *t)
{
	/* (u in (0, 1]: 53 random bits, plus one) */
	double u = (double)((next_random(t) >> 11) + 1) / 9007199254740992.0;
	return (uint64_t)(-log_of(u) * (double)rate);
}

/* The bytes a sampled block of s bytes stands for. */
static double weight(size_t s)
{
	double x = (double)s / (double)rate;
	return x > 40 ? (double)s : (double)s / (1 - exp_minus(x));
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
		t->sample_at = allocated + interval(t);
		/* (a large block has a site of its own, exactly; a size not
		 * known, 0, stands for nothing) */
		if (armed && p && usable && usable < MT_LARGE_BYTES)
			mt_site_sample(p, usable, caller, weight(usable));
	}
	int64_t live = (int64_t)(allocated - t->c.freed);
	if (live > t->live_mark)
		mt_peak_check(t, live);
	return p;
}
