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
	".partial{border-left:4px solid #c60;padding-left:.6em}\n"
	"#errors{color:#c00}\n</style></head><body>\n"
	"<h1>memtrace report</h1>\n<div id=\"run\"></div>\n"
	"<h2>Findings</h2>\n<div id=\"findings\"></div>\n"
	"<h2>Regions</h2>\n<table id=\"regions\"></table>\n"
	"<h2>Memory over time</h2>\n<canvas id=\"memory\"></canvas>\n"
	"<p class=\"note\" id=\"memory-note\"></p>\n"
	"<h2>Memory system calls per interval</h2>\n<canvas id=\"syscalls\"></canvas>\n"
	"<p class=\"note\">Every call the kernel saw in the process, memtrace's "
	"own among them (its threads' stacks and buffers, mostly at start-up), "
	"which the counts above leave out.</p>\n"
	"<h2>Page faults per interval</h2>\n<canvas id=\"faults\"></canvas>\n"
	"<p class=\"note\" id=\"faults-note\"></p>\n"
	"<p class=\"note\" id=\"resolution\"></p>\n"
	"<h2>Where the large blocks come from</h2>\n"
	"<p class=\"note\">Each box a frame of the call sites of blocks of "
	"128 KiB or more, the outermost at the top, as wide as its share: "
	"<select id=\"flame-weight\"><option value=\"bytes\">bytes allocated"
	"</option><option value=\"caused\">memory the allocator took from or "
	"gave back to the kernel on their account</option></select></p>\n"
	"<div id=\"flame\"></div>\n<div id=\"errors\"></div>\n";

/* after mt_page_write's prologue (report_page.h) */
static const char script[] =
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
	"  (S.cpu_s && S.cpu_s.user !== null ? (S.cpu_s.user + S.cpu_s.system).toFixed(3) : '?') +\n"
	"  ' s; peak live ' + (S.bytes.peak_live_known === false ? 'not known (events lost in the kill)' : mib(S.bytes.peak_live)) + ', peak RSS ' +\n"
	"  (S.peak_rss_bytes ? mib(S.peak_rss_bytes) : '?')));\n"
	"// How recording ended, where not a plain exit, as stat says it: a\n"
	"// killed or crashed run's figures are partial (new-user trial 32).\n"
	"if (S.partial_reason) {\n"
	"  const inc = S.incomplete || [];\n"
	"  run.appendChild(el('p', (S.partial ? 'Partial recording: ' :\n"
	"    'Complete figures: ') + S.partial_reason + (S.partial && inc.length ?\n"
	"    '. Incomplete figures (marked ?): ' + inc.join(', ') : ''),\n"
	"    S.partial ? 'partial' : 'note'));\n"
	"}\n"
	"const fl = document.getElementById('findings');\n"
	"if (!D.findings.length) fl.appendChild(el('p', 'none'));\n"
	"for (const f of D.findings) {\n"
	"  const d = el('div', undefined, 'finding');\n"
	"  d.appendChild(el('span', '[' + f.id + '] ', 'id'));\n"
	"  d.appendChild(el('span', (f.region === '(whole program)' ? 'the whole run' :\n"
	"    'region ' + f.region) + ', backend ' + f.backend));\n"
	"  d.appendChild(el('p', f.explanation));\n"
	"  for (const s of f.sites || [])\n"
	"    d.appendChild(el('div', 'site ' + Math.round(s.share * 100) + '%  ' +\n"
	"      s.label, 'fix'));\n"
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
	"// Each value holds until the next sample, the last one to the end of\n"
	"// the recording; a run shorter than the sampling period has a sample\n"
	"// or two, drawn as points (its chart was empty: new-user trial 32).\n"
	"const held = d => d.length && d[d.length - 1].x < R.seconds ?\n"
	"  d.concat([{x: R.seconds, y: d[d.length - 1].y}]) : d;\n"
	"const line = (label, data, color, fill) => ({label, data: held(data),\n"
	"  borderColor: color, backgroundColor: color,\n"
	"  pointRadius: data.length < 3 ? 3 : 0, borderWidth: 1.5, fill: fill || false,\n"
	"  stepped: true});\n"
	"const memory = [line('heap (program break), most', xy(R.heap_bytes), '#c33'),\n"
	"  line('heap, least', xy(R.heap_min_bytes), '#e99'),\n"
	"  line('anonymous resident', xy(R.anon_bytes), '#36c'),\n"
	"  line('live in the heap', xy(R.live_event_bytes && R.live_event_bytes.length ?\n"
	"    R.live_event_bytes : R.live_bytes), '#393'),\n"
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
	"const file_name = p => (p || '?').split('/').pop();\n"
	"function frame(f) {\n"
	"  const at = f.file ? ' (' + file_name(f.file) + ':' + f.line + ')' : '';\n"
	"  if (f.kind === 'python' || f.function) return f.function + at;\n"
	"  return f.symbol ? f.symbol + '+0x' + f.symbol_offset.toString(16) :\n"
	"    file_name(f.object) + '+0x' + (f.offset || 0).toString(16);\n"
	"}\n"
	"const weights = {bytes: s => s.large.bytes, caused: s =>\n"
	"  Object.entries(s.caused || {}).filter(([k]) => k.endsWith('_bytes'))\n"
	"    .reduce((a, [, v]) => a + v, 0)};\n"
	"const CUT = '[deeper frames not recorded]';\n"
	"function tree(weigh) {\n"
	"  const root = {name: 'all', value: 0, kids: new Map()};\n"
	"  for (const s of S.sites || []) {\n"
	"    const v = weigh(s);\n"
	"    if (!v) continue;\n"
	"    root.value += v;\n"
	"    let n = root;\n"
	"    /* Outermost first here.  Innermost first in the stack; in one\n"
	"     * recorded before stacks were interleaved, the Python frames\n"
	"     * first, then the native code that called the allocator */\n"
	"    const py = s.stack.filter(f => f.kind === 'python').reverse();\n"
	"    const nat = s.stack.filter(f => f.kind !== 'python').reverse();\n"
	"    const old = s.stack.length && s.stack[0].kind === 'python';\n"
	"    // (a stack the shim cut: its outermost row is not the root)\n"
	"    const names = (old ? py.concat(nat) : s.stack.slice().reverse()).map(frame);\n"
	"    if (s.stack_cut) names.unshift(CUT);\n"
	"    for (const k of names) {\n"
	"      if (!n.kids.has(k)) n.kids.set(k, {name: k, value: 0, kids: new Map()});\n"
	"      n = n.kids.get(k);\n"
	"      n.value += v;\n"
	"    }\n"
	"  }\n"
	"  return root;\n"
	"}\n"
	"const SVG = 'http://www.w3.org/2000/svg', W = 1000, H = 18;\n"
	"let boxes = 0;\n"
	"function icicle(weight) {\n"
	"  const box = document.getElementById('flame');\n"
	"  box.textContent = '';\n"
	"  const root = tree(weights[weight]);\n"
	"  if (!root.value) { box.appendChild(el('p', 'no call sites of large blocks ' +\n"
	"    'with ' + weight + ' in this recording')); return 0; }\n"
	"  const svg = document.createElementNS(SVG, 'svg');\n"
	"  let depth = 0, n = 0;\n"
	"  (function draw(node, x, d) {\n"
	"    depth = Math.max(depth, d + 1);\n"
	"    const w = node.value / root.value * W;\n"
	"    if (w < 0.5) return;\n"
	"    const g = svg.appendChild(document.createElementNS(SVG, 'g'));\n"
	"    const r = g.appendChild(document.createElementNS(SVG, 'rect'));\n"
	"    r.setAttribute('x', x); r.setAttribute('y', d * H);\n"
	"    r.setAttribute('width', Math.max(0.5, w - 1)); r.setAttribute('height', H - 1);\n"
	"    r.setAttribute('fill', d ? 'hsl(' + (20 + (d * 37) % 40) + ',80%,' +\n"
	"      (62 + (n % 3) * 6) + '%)' : '#bbb');\n"
	"    const t = g.appendChild(document.createElementNS(SVG, 'title'));\n"
	"    t.textContent = node.name + ': ' + (100 * node.value / root.value).toFixed(1) + '%';\n"
	"    if (w > 40) {\n"
	"      const s = g.appendChild(document.createElementNS(SVG, 'text'));\n"
	"      s.setAttribute('x', x + 3); s.setAttribute('y', d * H + 13);\n"
	"      s.setAttribute('font-size', '11');\n"
	"      s.textContent = node.name.slice(0, Math.floor(w / 6.5));\n"
	"    }\n"
	"    n++;\n"
	"    for (const k of [...node.kids.values()].sort((a, b) => b.value - a.value)) {\n"
	"      draw(k, x, d + 1);\n"
	"      x += k.value / root.value * W;\n"
	"    }\n"
	"  })(root, 0, 0);\n"
	"  svg.setAttribute('width', W); svg.setAttribute('height', depth * H);\n"
	"  box.appendChild(svg);\n"
	"  return n;\n"
	"}\n"
	"const pick = document.getElementById('flame-weight');\n"
	"pick.onchange = () => icicle(pick.value);\n"
	"boxes = icicle('bytes');\n"
	"const done = el('div'); done.id = 'rendered'; done.dataset.charts = charts;\n"
	"done.dataset.flame = boxes;\n"
	"document.body.appendChild(done);\n"
	"</script>\n</body></html>\n";

/* Text inside <script>: "</" would end it. */
static bool script_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (s[0] == '<' && s[1] == '/')
			fputs("<\\/", out), s++;
		else
			fputc(*s, out);
	}
	return !ferror(out);
}

static bool inline_script(FILE *out, const char *path, const char *who)
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

/* Every page's script starts so: a script error is shown in #errors,
 * and the data is D. */
static const char prologue[] =
	"<script>\n"
	"window.onerror = function (m) {\n"
	"  document.getElementById('errors').textContent += 'script error: ' + m;\n"
	"};\n"
	"const D = JSON.parse(document.getElementById('data').textContent);\n";

bool mt_page_write(FILE *out, const char *who, const char *page_head,
		   json_t *data, const char *page_script, const char *chartjs)
{
	char *text = data ? json_dumps(data, JSON_COMPACT) : NULL;
	if (!text) {
		fprintf(stderr, "memtrace: %s: out of memory\n", who);
		return false;
	}
	fputs(page_head, out);
	bool ok = inline_script(out, chartjs, who);
	if (ok) {
		fputs("<script type=\"application/json\" id=\"data\">", out);
		ok = script_text(out, text);
		fputs("</script>\n", out);
		fputs(prologue, out);
		fputs(page_script, out);
	}
	free(text);
	return ok && !ferror(out);
}

bool mt_report_page(FILE *out, json_t *summary, json_t *findings,
		    json_t *series, const char *chartjs)
{
	json_t *data = json_pack("{s:O, s:O, s:O}", "summary", summary, "findings",
				 findings, "series", series);
	bool ok = mt_page_write(out, "report", head, data, script, chartjs);
	json_decref(data);
	return ok;
}
