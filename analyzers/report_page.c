/* The page: the data as JSON inside it, Chart.js inlined beside it, and a
 * short script that builds the text (with textContent: a command line is
 * never markup) and the charts.  When everything is drawn the script adds
 * <div id="rendered" data-charts="N">, and a script error lands in
 * <div id="errors">: what the tests look for in headless Chromium. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_page.h"

static const char head[] =
	"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	"<title>memtrace report</title>\n<style>\n"
	"body{font-family:sans-serif;margin:1.5em auto;max-width:1100px;color:#222}\n"
	"h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.6em}\n"
	"table{border-collapse:collapse}td,th{padding:2px 10px;text-align:right;"
	"border-bottom:1px solid #ddd}th:first-child,td:first-child{text-align:left}\n"
	".finding{border-left:4px solid #c33;padding:4px 10px;margin:10px 0;background:#fafafa}\n"
	".finding .id{font-weight:bold}.fix{margin:3px 0 3px 1.5em;font-size:.95em}\n"
	".note{color:#666;font-size:.9em}canvas{max-height:340px}\n"
	"#errors{color:#c00}\n</style></head><body>\n"
	"<h1>memtrace report</h1>\n<div id=\"run\"></div>\n"
	"<h2>Findings</h2>\n<div id=\"findings\"></div>\n"
	"<h2>Regions</h2>\n<table id=\"regions\"></table>\n"
	"<h2>Memory over time</h2>\n<canvas id=\"memory\"></canvas>\n"
	"<p class=\"note\" id=\"memory-note\"></p>\n"
	"<h2>Memory system calls per interval</h2>\n<canvas id=\"syscalls\"></canvas>\n"
	"<h2>Page faults per interval</h2>\n<canvas id=\"faults\"></canvas>\n"
	"<p class=\"note\" id=\"faults-note\"></p>\n"
	"<p class=\"note\" id=\"resolution\"></p>\n<div id=\"errors\"></div>\n";

static const char script[] =
	"<script>\n"
	"window.onerror = function (m) {\n"
	"  document.getElementById('errors').textContent += 'script error: ' + m;\n"
	"};\n"
	"const D = JSON.parse(document.getElementById('data').textContent);\n"
	"const S = D.summary, R = D.series;\n"
	"function el(tag, text, cls) {\n"
	"  const e = document.createElement(tag);\n"
	"  if (text !== undefined) e.textContent = text;\n"
	"  if (cls) e.className = cls;\n"
	"  return e;\n"
	"}\n"
	"function mib(b) { return (b / 1048576).toFixed(1) + ' MiB'; }\n"
	"const run = document.getElementById('run');\n"
	"run.appendChild(el('p', (S.command || []).join(' ')));\n"
	"run.appendChild(el('p', 'pid ' + S.pid + ', backend ' + S.backend.name + ' ' +\n"
	"  S.backend.version + ' (' + S.backend.library + '); wall ' +\n"
	"  (S.wall_s === null ? '?' : S.wall_s.toFixed(3)) + ' s, CPU ' +\n"
	"  (S.cpu_s ? (S.cpu_s.user + S.cpu_s.system).toFixed(3) : '?') +\n"
	"  ' s; peak live ' + mib(S.bytes.peak_live) + ', peak RSS ' +\n"
	"  (S.peak_rss_bytes ? mib(S.peak_rss_bytes) : '?')));\n"
	"const fl = document.getElementById('findings');\n"
	"if (!D.findings.length) fl.appendChild(el('p', 'none'));\n"
	"for (const f of D.findings) {\n"
	"  const d = el('div', undefined, 'finding');\n"
	"  d.appendChild(el('span', '[' + f.id + '] ', 'id'));\n"
	"  d.appendChild(el('span', (f.region === '(whole program)' ? 'the whole run' :\n"
	"    'region ' + f.region) + ', backend ' + f.backend));\n"
	"  d.appendChild(el('p', f.explanation));\n"
	"  for (const x of f.fixes)\n"
	"    d.appendChild(el('div', 'fix (' + x.kind + '): ' +\n"
	"      (x.setting ? x.setting + ': ' : '') + x.description, 'fix'));\n"
	"  fl.appendChild(d);\n"
	"}\n"
	"const rt = document.getElementById('regions');\n"
	"const rows = S.regions || [];\n"
	"if (!rows.length) rt.appendChild(el('tr')).appendChild(el('td', 'none marked'));\n"
	"else {\n"
	"  const h = rt.appendChild(el('tr'));\n"
	"  for (const c of ['region', 'calls', 'time per call, median', 'page faults',\n"
	"                   'brk', 'mmap', 'munmap', 'madvise']) h.appendChild(el('th', c));\n"
	"  for (const g of rows) {\n"
	"    const r = rt.appendChild(el('tr'));\n"
	"    const pf = g.page_faults || {}, sc = g.syscalls || {};\n"
	"    for (const v of [g.name, g.count, (g.wall_s.median * 1e3).toFixed(3) + ' ms',\n"
	"                     (pf.minor || 0) + (pf.major || 0), sc.brk, sc.mmap, sc.munmap,\n"
	"                     sc.madvise]) r.appendChild(el('td', String(v)));\n"
	"  }\n"
	"}\n"
	"const xy = s => s.map(p => ({x: p[0], y: p[1] / 1048576}));\n"
	"const count = s => s.map(p => ({x: p[0], y: p[1]}));\n"
	"const tints = ['rgba(90,130,220,0.16)', 'rgba(230,150,40,0.18)',\n"
	"  'rgba(60,170,90,0.16)', 'rgba(190,80,190,0.16)', 'rgba(120,120,120,0.16)'];\n"
	"const names = [...new Set(R.regions.map(r => r[2]))];\n"
	"const tint = n => tints[names.indexOf(n) % tints.length];\n"
	"const bands = {id: 'bands', beforeDatasetsDraw(chart) {\n"
	"  const a = chart.chartArea, x = chart.scales.x, c = chart.ctx;\n"
	"  c.save();\n"
	"  for (const [s, e, n] of R.regions) {\n"
	"    const x0 = x.getPixelForValue(s), x1 = x.getPixelForValue(e);\n"
	"    c.fillStyle = tint(n);\n"
	"    c.fillRect(x0, a.top, Math.max(1, x1 - x0), a.bottom - a.top);\n"
	"  }\n"
	"  c.restore();\n"
	"}};\n"
	"function legend(id) {\n"
	"  const p = document.getElementById(id);\n"
	"  for (const n of names) {\n"
	"    const k = el('span', '\\u2588\\u2588 ' + n + '   ');\n"
	"    k.style.color = tint(n).replace(/0\\.1\\d\\)$/, '0.6)');\n"
	"    p.appendChild(k);\n"
	"  }\n"
	"}\n"
	"const axis = t => ({type: 'linear', title: {display: true, text: t}});\n"
	"const time = () => Object.assign(axis('seconds'), {min: 0, max: R.seconds,\n"
	"  offset: false});\n"
	"const base = (y) => ({animation: false, parsing: false, normalized: true,\n"
	"  scales: {x: time(), y: axis(y)}, plugins: {decimation: {enabled: false}}});\n"
	"let charts = 0;\n"
	"const line = (label, data, color, fill) => ({label, data, borderColor: color,\n"
	"  backgroundColor: color, pointRadius: 0, borderWidth: 1.5, fill: fill || false,\n"
	"  stepped: true});\n"
	"const memory = [line('heap (program break), most', xy(R.heap_bytes), '#c33'),\n"
	"  line('heap, least', xy(R.heap_min_bytes), '#e99'),\n"
	"  line('anonymous resident', xy(R.anon_bytes), '#36c'),\n"
	"  line('live in the heap', xy(R.live_bytes), '#393'),\n"
	"  line('file-backed resident', xy(R.file_bytes), '#999')]\n"
	"  .filter(d => d.data.length);\n"
	"new Chart(document.getElementById('memory'), {type: 'line',\n"
	"  data: {datasets: memory}, options: base('MiB'), plugins: [bands]});\n"
	"charts++;\n"
	"document.getElementById('memory-note').textContent =\n"
	"  (R.anon_bytes.length ? '' : 'No resident-memory samples (a trace before format ' +\n"
	"   '1.9, or MEMTRACE_RSS=0). ') + (names.length ? 'Shaded: the calls of ' +\n"
	"   'each region: ' : 'No regions marked.');\n"
	"legend('memory-note');\n"
	"const colors = {brk: '#c33', mmap: '#36c', munmap: '#69c', mremap: '#c9c',\n"
	"  madvise: '#e93'};\n"
	"new Chart(document.getElementById('syscalls'), {type: 'bar', data: {datasets:\n"
	"  Object.keys(R.syscalls).map(k => ({label: k, data: count(R.syscalls[k]),\n"
	"    backgroundColor: colors[k], barThickness: 2}))},\n"
	"  options: Object.assign(base('calls (' + R.syscall_source + ')'),\n"
	"    {scales: {x: Object.assign(time(), {stacked: true}),\n"
	"              y: Object.assign(axis('calls'), {stacked: true})}}),\n"
	"  plugins: [bands]});\n"
	"charts++;\n"
	"if (R.faults.length) {\n"
	"  new Chart(document.getElementById('faults'), {type: 'bar', data: {datasets:\n"
	"    [{label: 'sampled page faults', data: count(R.faults), backgroundColor: '#555',\n"
	"      barThickness: 2}]}, options: base('faults'), plugins: [bands]});\n"
	"  charts++;\n"
	"} else {\n"
	"  document.getElementById('faults').style.display = 'none';\n"
	"}\n"
	"document.getElementById('faults-note').textContent = R.faults.length ? '' :\n"
	"  'No fault samples in this recording (MEMTRACE_FAULTS=sample records them).';\n"
	"document.getElementById('resolution').textContent = R.events + ' events over ' +\n"
	"  R.seconds.toFixed(3) + ' s, drawn in intervals of ' +\n"
	"  (R.interval_s * 1e3).toFixed(3) + ' ms (the most of each interval for memory, ' +\n"
	"  'the sum for calls and faults), so the page stays responsive whatever the ' +\n"
	"  'size of the recording.';\n"
	"const done = el('div'); done.id = 'rendered'; done.dataset.charts = charts;\n"
	"document.body.appendChild(done);\n"
	"</script>\n</body></html>\n";

bool mt_page_script_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (s[0] == '<' && s[1] == '/')
			fputs("<\\/", out), s++;
		else
			fputc(*s, out);
	}
	return !ferror(out);
}

bool mt_page_inline_script(FILE *out, const char *path, const char *who)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		fprintf(stderr, "memtrace: %s: cannot read %s: %m (install "
				"Debian's libjs-chart.js)\n",
			who, path);
		return false;
	}
	char buf[65536];
	size_t n;
	fputs("<script>\n", out);
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		fwrite(buf, 1, n, out);
	fputs("\n</script>\n", out);
	fclose(f);
	return !ferror(out);
}

bool mt_report_page(FILE *out, json_t *summary, json_t *findings,
		    json_t *series, const char *chartjs)
{
	json_t *data = json_pack("{s:O, s:O, s:O}", "summary", summary, "findings",
				 findings, "series", series);
	char *text = data ? json_dumps(data, JSON_COMPACT) : NULL;
	json_decref(data);
	if (!text) {
		fprintf(stderr, "memtrace: report: out of memory\n");
		return false;
	}
	fputs(head, out);
	bool ok = mt_page_inline_script(out, chartjs, "report");
	if (ok) {
		fputs("<script type=\"application/json\" id=\"data\">", out);
		ok = mt_page_script_text(out, text);
		fputs("</script>\n", out);
		fputs(script, out);
	}
	free(text);
	return ok && !ferror(out);
}
