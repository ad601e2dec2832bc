/* The compare page: the table as compare prints it, then for each backend
 * one recorded run's memory and system calls over time, every chart on the
 * same axes (the longest run's seconds; the most memory of any run; calls
 * per second, since each run's intervals have a width of their own).  As
 * in report_page.c, text is set with textContent, and the tests look for
 * <div id="rendered" data-charts="N"> and <div id="errors">. */
#include "compare_page.h"
#include "report_page.h"

static const char head[] =
	"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	"<title>memtrace compare</title>\n<style>\n"
	"body{font-family:sans-serif;margin:1.5em auto;max-width:1100px;color:#222}\n"
	"h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.6em}h3{font-size:1em}\n"
	"pre{background:#f6f6f6;padding:8px;overflow-x:auto}\n"
	".note{color:#666;font-size:.9em}canvas{max-height:260px}\n"
	"#errors{color:#c00}\n</style></head><body>\n"
	"<h1>memtrace compare</h1>\n<p id=\"command\"></p>\n<pre id=\"table\"></pre>\n"
	"<h2>One run of each backend, on the same axes</h2>\n"
	"<p class=\"note\">Memory in MiB, system calls per second, over the "
	"seconds of the run; a recorded run (with a trace) beside the counted "
	"ones of the table.  Shaded: the calls of each region.</p>\n"
	"<div id=\"runs\"></div>\n<div id=\"errors\"></div>\n";

/* after mt_page_write's prologue (report_page.h) */
static const char script[] =
	"function el(tag, text) {\n"
	"  const e = document.createElement(tag);\n"
	"  if (text !== undefined) e.textContent = text;\n"
	"  return e;\n"
	"}\n"
	"document.getElementById('table').textContent = D.table;\n"
	"const first = D.runs.length ? D.runs[0].summary : null;\n"
	"document.getElementById('command').textContent =\n"
	"  first ? (first.command || []).join(' ') : 'no run recorded';\n"
	"const MEM = ['heap_bytes', 'anon_bytes', 'live_bytes'];\n"
	"const SYS = ['brk', 'mmap', 'munmap', 'mremap', 'madvise'];\n"
	"let xmax = 0, memmax = 0, ratemax = 0;\n"
	"for (const r of D.runs) {\n"
	"  const R = r.series, w = R.interval_s || 1;\n"
	"  xmax = Math.max(xmax, R.seconds);\n"
	"  for (const k of MEM) for (const p of R[k] || []) memmax = Math.max(memmax, p[1]);\n"
	"  const sums = new Map();\n"
	"  for (const k of SYS) for (const p of (R.syscalls || {})[k] || [])\n"
	"    sums.set(p[0], (sums.get(p[0]) || 0) + p[1]);\n"
	"  for (const v of sums.values()) ratemax = Math.max(ratemax, v / w);\n"
	"}\n"
	"const tints = ['rgba(90,130,220,0.16)', 'rgba(230,150,40,0.18)',\n"
	"  'rgba(60,170,90,0.16)', 'rgba(190,80,190,0.16)', 'rgba(120,120,120,0.16)'];\n"
	"const names = [...new Set(D.runs.flatMap(r => r.series.regions.map(g => g[2])))];\n"
	"const bands = R => ({id: 'bands', beforeDatasetsDraw(chart) {\n"
	"  const a = chart.chartArea, x = chart.scales.x, c = chart.ctx;\n"
	"  c.save();\n"
	"  for (const [s, e, n] of R.regions) {\n"
	"    const x0 = x.getPixelForValue(s), x1 = x.getPixelForValue(e);\n"
	"    c.fillStyle = tints[names.indexOf(n) % tints.length];\n"
	"    c.fillRect(x0, a.top, Math.max(1, x1 - x0), a.bottom - a.top);\n"
	"  }\n"
	"  c.restore();\n"
	"}});\n"
	"const axis = (t, most) => ({type: 'linear', min: 0,\n"
	"  suggestedMax: most || undefined, title: {display: true, text: t}});\n"
	"const options = (y, ymax, stacked) => ({animation: false, parsing: false,\n"
	"  normalized: true, scales: {x: Object.assign(axis('seconds'),\n"
	"  {max: xmax, offset: false, stacked}), y: Object.assign(axis(y, ymax),\n"
	"  {stacked})}, plugins: {decimation: {enabled: false}}});\n"
	"const line = (label, data, color) => ({label, data, borderColor: color,\n"
	"  backgroundColor: color, pointRadius: 0, borderWidth: 1.5, stepped: true});\n"
	"const colors = {brk: '#c33', mmap: '#36c', munmap: '#69c', mremap: '#c9c',\n"
	"  madvise: '#e93'};\n"
	"let charts = 0;\n"
	"const box = document.getElementById('runs');\n"
	"for (const r of D.runs) {\n"
	"  const R = r.series, S = r.summary, w = R.interval_s || 1;\n"
	"  box.appendChild(el('h3', r.backend + ': wall ' +\n"
	"    (S.wall_s === null ? '?' : S.wall_s.toFixed(3)) + ' s, peak RSS ' +\n"
	"    (S.peak_rss_bytes ? (S.peak_rss_bytes / 1048576).toFixed(1) + ' MiB' : '?') +\n"
	"    ', ' + R.events + ' events'));\n"
	"  const mib = s => (s || []).map(p => ({x: p[0], y: p[1] / 1048576}));\n"
	"  const mem = box.appendChild(el('canvas'));\n"
	"  new Chart(mem, {type: 'line', data: {datasets: [\n"
	"    line('heap (program break), most', mib(R.heap_bytes), '#c33'),\n"
	"    line('anonymous resident', mib(R.anon_bytes), '#36c'),\n"
	"    line('live in the heap', mib(R.live_bytes), '#393')]\n"
	"    .filter(d => d.data.length)},\n"
	"    options: options('MiB', memmax / 1048576, false), plugins: [bands(R)]});\n"
	"  charts++;\n"
	"  const sys = box.appendChild(el('canvas'));\n"
	"  new Chart(sys, {type: 'bar', data: {datasets: SYS.filter(k => (R.syscalls || {})[k])\n"
	"    .map(k => ({label: k, backgroundColor: colors[k], barThickness: 2,\n"
	"      data: R.syscalls[k].map(p => ({x: p[0], y: p[1] / w}))}))},\n"
	"    options: options('calls per second (' + R.syscall_source + ')', ratemax, true),\n"
	"    plugins: [bands(R)]});\n"
	"  charts++;\n"
	"}\n"
	"const done = el('div'); done.id = 'rendered'; done.dataset.charts = charts;\n"
	"document.body.appendChild(done);\n"
	"</script>\n</body></html>\n";

bool mt_compare_page(FILE *out, const char *table, json_t *runs,
		     const char *chartjs)
{
	json_t *data = json_pack("{s:s, s:O}", "table", table, "runs", runs);
	bool ok = mt_page_write(out, "compare", head, data, script, chartjs);
	json_decref(data);
	return ok;
}
