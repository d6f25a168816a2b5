/*
 * svg.c - the report as a self-contained interactive flame graph (SVG with
 * inline JavaScript): one box per calling context, width proportional to
 * its total, the root ("all") at the bottom, children ordered by name.
 * Hovering shows the frame, its file:line and counts; clicking zooms into
 * a frame; "Search" (or Ctrl-F) highlights frames matching a regular
 * expression and shows the share they cover. The URL fragment
 * "#search=RE&zoom=fN" applies both on load (used by the tests). The page
 * marks itself ready with data-ready="1" on the root element. Owns the
 * layout, the escaping and the script; nothing is fetched from elsewhere.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/internal.h"

#define SVG_WIDTH 1200
#define PAD 10.0           /* left/right margin */
#define FRAME_H 16.0       /* box pitch */
#define TOP 40.0           /* title and buttons */
#define BOTTOM 34.0        /* details line */
#define FONT_PX 12
#define CHAR_W 7.25        /* advance of one monospace character at 12 px */
#define MIN_W 0.1          /* boxes narrower than this are not drawn */

typedef struct svg_state {
    FILE *f;
    const lp_report *r;
    const lp_report_write_opts *o;
    double scale;           /* pixels per count */
    uint64_t total;
    size_t next_id;
    size_t max_depth;
    int oom;
} svg_state;

/* ---- escaping ------------------------------------------------------------- */

/* Length of a valid UTF-8 sequence at s (1..4), or 0 if invalid. */
static size_t utf8_len(const unsigned char *s)
{
    size_t n, i;

    if (s[0] < 0x80)
        return 1;
    n = (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3
        : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
    for (i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

/* XML text/attribute content: markup characters escaped, control
 * characters and invalid UTF-8 replaced by '?', at most max_chars
 * characters (0: all). */
static void xml_put(FILE *f, const char *str, size_t max_chars)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t k, chars = 0;

    while (*s && (!max_chars || chars < max_chars)) {
        chars++;
        switch (*s) {
        case '&': fputs("&amp;", f); s++; continue;
        case '<': fputs("&lt;", f); s++; continue;
        case '>': fputs("&gt;", f); s++; continue;
        case '"': fputs("&quot;", f); s++; continue;
        case '\'': fputs("&apos;", f); s++; continue;
        }
        k = utf8_len(s);
        if (k == 0 || (*s < 0x20 && *s != '\t')) {
            fputc('?', f);
            s++;
        } else {
            fwrite(s, 1, k, f);
            s += k;
        }
    }
}

static size_t utf8_chars(const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t n = 0, k;

    while (*s) {
        k = utf8_len(s);
        s += k ? k : 1;
        n++;
    }
    return n;
}

/* The label that fits in w pixels (same rule as fit() in the script). */
static void put_label(FILE *f, const char *name, double w)
{
    long n = (long)((w - 6.0) / CHAR_W);

    if (n < 3)
        return;
    if (utf8_chars(name) <= (size_t)n) {
        xml_put(f, name, 0);
        return;
    }
    xml_put(f, name, (size_t)(n - 2));
    fputs("..", f);
}

/* ---- colours ------------------------------------------------------------------ */

static uint32_t fnv1a(const char *s)
{
    uint32_t h = 2166136261u;

    while (*s)
        h = (h ^ (unsigned char)*s++) * 16777619u;
    return h;
}

static void colour(const lp_report_node *n, const char *name, char *buf,
                   size_t sz)
{
    uint32_t h = fnv1a(name);
    unsigned a = h % 256, b = (h >> 8) % 256, c = (h >> 16) % 256;

    if (!n->func)
        snprintf(buf, sz, "rgb(200,200,200)");
    else if (n->func->external)
        snprintf(buf, sz, "rgb(%u,%u,%u)", 150 + a % 40, 150 + a % 40,
                 160 + a % 40);
    else if (n->inlined)
        snprintf(buf, sz, "rgb(%u,%u,%u)", 60 + a % 60, 170 + b % 60,
                 190 + c % 60);
    else
        snprintf(buf, sz, "rgb(%u,%u,%u)", 205 + a % 50, b % 230, c % 55);
}

/* ---- frames ------------------------------------------------------------------- */

static int by_name(const void *pa, const void *pb)
{
    const lp_report_node *a = *(const lp_report_node *const *)pa;
    const lp_report_node *b = *(const lp_report_node *const *)pb;
    int c = strcmp(a->func->display, b->func->display);

    if (!c)
        c = strcmp(a->func->name, b->func->name);
    if (!c && a->callsite.line != b->callsite.line)
        c = a->callsite.line < b->callsite.line ? -1 : 1;
    if (!c && a->callsite.disc != b->callsite.disc)
        c = a->callsite.disc < b->callsite.disc ? -1 : 1;
    return c ? c : (int)a->inlined - (int)b->inlined;
}

static size_t visible_depth(const svg_state *s, const lp_report_node *n,
                            size_t d)
{
    size_t i, m = d, k;

    for (i = 0; i < n->nchildren; i++)
        if ((double)n->children[i]->total * s->scale >= MIN_W &&
            (k = visible_depth(s, n->children[i], d + 1)) > m)
            m = k;
    return m;
}

/* "name [file:line] - total N unit (P%), self M (Q%), called at file:L" */
static void put_info(svg_state *s, const lp_report_node *n, const char *name)
{
    const lp_report_func *fn = n->func, *pf = n->parent ? n->parent->func : NULL;
    const char *unit = s->r->unit == LP_REPORT_SAMPLES ? "samples" : "counts";
    size_t i, best = 0;
    uint32_t line = 0, cl;

    xml_put(s->f, name, 0);
    for (i = 1; i < n->nlines; i++)
        if (n->lines[i].count > n->lines[best].count)
            best = i;
    if (fn && n->nlines)
        line = lp_report_abs_line(fn, n->lines[best].loc);
    if (fn && fn->file) {
        fputs(" [", s->f);
        xml_put(s->f, fn->file, 0);
        if (line || fn->start_line)
            fprintf(s->f, ":%" PRIu32, line ? line : fn->start_line);
        fputc(']', s->f);
    }
    fprintf(s->f, " - total %" PRIu64 " %s (%.2f%%), self %" PRIu64 " (%.2f%%)",
            n->total, unit, rp_pct(n->total, s->total), n->self,
            rp_pct(n->self, s->total));
    if (pf) {
        cl = lp_report_abs_line(pf, n->callsite);
        fprintf(s->f, ", %s at ", n->inlined ? "inlined" : "called");
        if (pf->file && cl) {
            xml_put(s->f, pf->file, 0);
            fprintf(s->f, ":%" PRIu32, cl);
        } else {
            fprintf(s->f, "+%" PRIu32, n->callsite.line);
            if (n->callsite.disc)
                fprintf(s->f, ".%" PRIu32, n->callsite.disc);
        }
    }
}

/* c is the frame's start in counts from the left edge; the script decides
 * zooming on (c, total), exact integers, so that rounding the pixel
 * geometry never hides a descendant or shows a stranger. */
static void put_frame(svg_state *s, const lp_report_node *n, uint64_t c,
                      size_t d)
{
    const char *name = n->func ? rp_name(n->func, s->o) : "all";
    double x = PAD + (double)c * s->scale, w = (double)n->total * s->scale;
    double y = TOP + (double)(s->max_depth - d) * FRAME_H;
    char fill[32];

    colour(n, name, fill, sizeof fill);
    fprintf(s->f, "<g class=\"f\" id=\"f%zu\" data-d=\"%zu\" data-x=\"%.2f\" "
                  "data-w=\"%.2f\" data-c=\"%" PRIu64 "\" data-t=\"%" PRIu64
                  "\" data-s=\"%" PRIu64 "\" data-n=\"",
            s->next_id++, d, x, w, c, n->total, n->self);
    xml_put(s->f, name, 0);
    fputs("\" data-i=\"", s->f);
    put_info(s, n, name);
    fputs("\"><title>", s->f);
    put_info(s, n, name);
    fprintf(s->f, "</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
                  "height=\"%.1f\" fill=\"%s\" rx=\"2\" ry=\"2\"/>"
                  "<text x=\"%.2f\" y=\"%.1f\">",
            x, y, w, FRAME_H - 1.0, fill, x + 3.0, y + 11.5);
    put_label(s->f, name, w);
    fputs("</text></g>\n", s->f);
}

static void layout(svg_state *s, const lp_report_node *n, uint64_t c, size_t d)
{
    const lp_report_node **kids;
    uint64_t cc = c;
    size_t i;

    put_frame(s, n, c, d);
    if (!n->nchildren)
        return;
    if (!(kids = malloc(n->nchildren * sizeof *kids))) {
        s->oom = 1;
        return;
    }
    memcpy(kids, n->children, n->nchildren * sizeof *kids);
    qsort(kids, n->nchildren, sizeof *kids, by_name);
    for (i = 0; i < n->nchildren; i++) {
        if ((double)kids[i]->total * s->scale >= MIN_W)
            layout(s, kids[i], cc, d + 1);
        cc += kids[i]->total;
    }
    free(kids);
}

/* ---- document ------------------------------------------------------------------ */

static const char script[] =
    "(function () {\n"
    "'use strict';\n"
    "var svg, frames = [], byId = {}, W, PAD, CW, TOTAL, UNIT;\n"
    "var details, matched, unzoomBtn, searchBtn, zoomed = null, searching = false;\n"
    "function fit(name, w) {\n"
    "  var n = Math.floor((w - 6) / CW);\n"
    "  if (n < 3) return '';\n"
    "  if (name.length <= n) return name;\n"
    "  return name.substring(0, n - 2) + '..';\n"
    "}\n"
    "function place(f, x, w) {\n"
    "  f.rect.setAttribute('x', x.toFixed(2));\n"
    "  f.rect.setAttribute('width', w.toFixed(2));\n"
    "  f.text.setAttribute('x', (x + 3).toFixed(2));\n"
    "  f.text.textContent = fit(f.name, w);\n"
    "}\n"
    "function restyle(f) {\n"
    "  f.g.setAttribute('class', 'f' + (f.parent ? ' parent' : '') + (f.match ? ' match' : ''));\n"
    "  f.rect.setAttribute('fill', f.match ? 'rgb(230,0,230)' : f.fill);\n"
    "}\n"
    "function show(f, on) {\n"
    "  if (on) f.g.removeAttribute('display'); else f.g.setAttribute('display', 'none');\n"
    "}\n"
    "function frameOf(el) {\n"
    "  while (el && el !== svg) { if (el.lpFrame) return el.lpFrame; el = el.parentNode; }\n"
    "  return null;\n"
    "}\n"
    "function zoom(z) {\n"
    "  var ratio = (W - 2 * PAD) / z.t;\n"
    "  frames.forEach(function (f) {\n"
    "    var on;\n"
    "    if (f.d < z.d) {\n"
    "      on = f.c <= z.c && f.c + f.t >= z.c + z.t;\n"
    "      f.parent = on;\n"
    "      if (on) place(f, PAD, W - 2 * PAD);\n"
    "    } else {\n"
    "      on = f.c >= z.c && f.c + f.t <= z.c + z.t;\n"
    "      f.parent = false;\n"
    "      if (on) place(f, PAD + (f.c - z.c) * ratio, f.t * ratio);\n"
    "    }\n"
    "    show(f, on);\n"
    "    restyle(f);\n"
    "  });\n"
    "  zoomed = z;\n"
    "  unzoomBtn.setAttribute('class', 'btn');\n"
    "  svg.setAttribute('data-zoom', z.g.id);\n"
    "}\n"
    "function unzoom() {\n"
    "  frames.forEach(function (f) { f.parent = false; show(f, true); place(f, f.x, f.w); restyle(f); });\n"
    "  zoomed = null;\n"
    "  unzoomBtn.setAttribute('class', 'btn hide');\n"
    "  svg.removeAttribute('data-zoom');\n"
    "}\n"
    "function search(term) {\n"
    "  var re, hits = [], sum = 0, end = -1, count = 0;\n"
    "  try { re = new RegExp(term); } catch (e) { details.textContent = 'Bad regular expression: ' + term; return; }\n"
    "  frames.forEach(function (f) {\n"
    "    f.match = f.d > 0 && re.test(f.name);\n"
    "    if (f.match) { count++; hits.push(f); }\n"
    "    restyle(f);\n"
    "  });\n"
    "  hits.sort(function (a, b) { return a.c - b.c || b.t - a.t || a.d - b.d; });\n"
    "  hits.forEach(function (f) {\n"
    "    if (f.c >= end) { sum += f.t; end = f.c + f.t; }\n"
    "  });\n"
    "  var pct = TOTAL > 0 ? 100 * sum / TOTAL : 0;\n"
    "  matched.textContent = 'Matched: ' + pct.toFixed(2) + '% (' + sum + ' of ' + TOTAL + ' ' + UNIT + ')';\n"
    "  svg.setAttribute('data-search', term);\n"
    "  svg.setAttribute('data-matches', String(count));\n"
    "  svg.setAttribute('data-matched', pct.toFixed(2));\n"
    "  searchBtn.textContent = 'Reset Search';\n"
    "  searching = true;\n"
    "}\n"
    "function clearSearch() {\n"
    "  frames.forEach(function (f) { f.match = false; restyle(f); });\n"
    "  matched.textContent = ' ';\n"
    "  svg.removeAttribute('data-search');\n"
    "  svg.removeAttribute('data-matches');\n"
    "  svg.removeAttribute('data-matched');\n"
    "  searchBtn.textContent = 'Search';\n"
    "  searching = false;\n"
    "}\n"
    "function askSearch() {\n"
    "  if (searching) { clearSearch(); return; }\n"
    "  var term = window.prompt('Search for (regular expression):', '');\n"
    "  if (term) search(term);\n"
    "}\n"
    "function init() {\n"
    "  svg = document.documentElement;\n"
    "  W = parseFloat(svg.getAttribute('width'));\n"
    "  PAD = parseFloat(svg.getAttribute('data-pad'));\n"
    "  CW = parseFloat(svg.getAttribute('data-cw'));\n"
    "  TOTAL = parseFloat(svg.getAttribute('data-total'));\n"
    "  UNIT = svg.getAttribute('data-unit');\n"
    "  details = document.getElementById('details');\n"
    "  matched = document.getElementById('matched');\n"
    "  unzoomBtn = document.getElementById('unzoom');\n"
    "  searchBtn = document.getElementById('search');\n"
    "  var gs = svg.querySelectorAll('g.f');\n"
    "  for (var i = 0; i < gs.length; i++) {\n"
    "    var g = gs[i], r = g.querySelector('rect');\n"
    "    var f = { g: g, rect: r, text: g.querySelector('text'), fill: r.getAttribute('fill'),\n"
    "              x: parseFloat(g.getAttribute('data-x')), w: parseFloat(g.getAttribute('data-w')),\n"
    "              d: parseInt(g.getAttribute('data-d'), 10), t: parseFloat(g.getAttribute('data-t')),\n"
    "              c: parseFloat(g.getAttribute('data-c')),\n"
    "              name: g.getAttribute('data-n'), info: g.getAttribute('data-i'),\n"
    "              parent: false, match: false };\n"
    "    g.lpFrame = f;\n"
    "    frames.push(f);\n"
    "    byId[g.id] = f;\n"
    "  }\n"
    "  svg.addEventListener('mouseover', function (e) {\n"
    "    var f = frameOf(e.target);\n"
    "    if (f) details.textContent = f.info;\n"
    "  });\n"
    "  svg.addEventListener('mouseout', function (e) {\n"
    "    if (frameOf(e.target)) details.textContent = ' ';\n"
    "  });\n"
    "  svg.addEventListener('click', function (e) {\n"
    "    var f = frameOf(e.target);\n"
    "    if (e.target === unzoomBtn) unzoom();\n"
    "    else if (e.target === searchBtn) askSearch();\n"
    "    else if (f && f.d === 0) unzoom();\n"
    "    else if (f) zoom(f);\n"
    "  });\n"
    "  window.addEventListener('keydown', function (e) {\n"
    "    if (e.key === 'F3' || ((e.ctrlKey || e.metaKey) && (e.key === 'f' || e.key === 'F'))) {\n"
    "      e.preventDefault();\n"
    "      askSearch();\n"
    "    } else if (e.key === 'Escape') {\n"
    "      unzoom();\n"
    "      clearSearch();\n"
    "    }\n"
    "  });\n"
    "  var params = (window.location.hash || '').replace(/^#/, '').split('&');\n"
    "  params.forEach(function (p) {\n"
    "    var k = p.indexOf('='), key = p.substring(0, k), v;\n"
    "    if (k < 0) return;\n"
    "    v = decodeURIComponent(p.substring(k + 1));\n"
    "    if (key === 'zoom' && byId[v]) zoom(byId[v]);\n"
    "  });\n"
    "  params.forEach(function (p) {\n"
    "    var k = p.indexOf('=');\n"
    "    if (k >= 0 && p.substring(0, k) === 'search') search(decodeURIComponent(p.substring(k + 1)));\n"
    "  });\n"
    "  svg.setAttribute('data-frames', String(frames.length));\n"
    "  svg.setAttribute('data-ready', '1');\n"
    "}\n"
    "window.addEventListener('load', init);\n"
    "})();\n";

static const char style[] =
    "text { font-family: 'DejaVu Sans Mono', Menlo, Consolas, monospace; "
    "font-size: 12px; fill: rgb(0,0,0); }\n"
    "#title { font-size: 17px; }\n"
    ".btn { cursor: pointer; fill: rgb(0,0,160); }\n"
    ".hide { display: none; }\n"
    "g.f { cursor: pointer; }\n"
    "g.f:hover rect { stroke: rgb(0,0,0); stroke-width: 0.5; }\n"
    "g.parent { opacity: 0.5; }\n";

static void put_head(svg_state *s, unsigned width, double height,
                     const char *title)
{
    FILE *f = s->f;

    fprintf(f, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
               "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" "
               "width=\"%u\" height=\"%.0f\" viewBox=\"0 0 %u %.0f\" "
               "data-generator=\"lbr2prof\" data-pad=\"%.0f\" data-cw=\"%.2f\" "
               "data-total=\"%" PRIu64 "\" data-unit=\"%s\">\n",
            width, height, width, height, PAD, CHAR_W, s->total,
            s->r->unit == LP_REPORT_SAMPLES ? "samples" : "counts");
    fprintf(f, "<style type=\"text/css\">\n%s</style>\n", style);
    fprintf(f, "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n",
            script);
    fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%.0f\" "
               "fill=\"rgb(250,250,240)\"/>\n", width, height);
    fprintf(f, "<text id=\"title\" x=\"%.1f\" y=\"24\" text-anchor=\"middle\">",
            width / 2.0);
    xml_put(f, title, 0);
    fputs("</text>\n", f);
    fprintf(f, "<text id=\"unzoom\" class=\"btn hide\" x=\"%.0f\" y=\"24\">"
               "Reset Zoom</text>\n", PAD);
    fprintf(f, "<text id=\"search\" class=\"btn\" x=\"%.0f\" y=\"24\" "
               "text-anchor=\"end\">Search</text>\n", width - PAD);
    fprintf(f, "<text id=\"details\" x=\"%.0f\" y=\"%.0f\"> </text>\n", PAD,
            height - 12);
    fprintf(f, "<text id=\"matched\" x=\"%.0f\" y=\"%.0f\" "
               "text-anchor=\"end\"> </text>\n", width - PAD, height - 12);
}

int rp_write_svg(FILE *f, const lp_report *r, const lp_report_write_opts *o,
                 lp_error *err)
{
    unsigned width = o->width ? o->width : SVG_WIDTH;
    svg_state s = {f, r, o, 0, r->root.n.total, 0, 0, 0};
    char title[512];
    double height;

    if (width < 100 || width > 100000)
        return lp_error_set(err, LP_EUSAGE, "report: SVG width %u out of "
                            "range (100..100000)", width);
    s.scale = s.total ? ((double)width - 2 * PAD) / (double)s.total : 0;
    s.max_depth = s.total ? visible_depth(&s, &r->root.n, 0) : 0;
    height = TOP + (double)(s.max_depth + 1) * FRAME_H + BOTTOM;
    snprintf(title, sizeof title, "Flame graph: %s",
             o->title ? o->title : r->input ? basename(r->input) : "lbr2prof");
    put_head(&s, width, height, title);
    fputs("<g id=\"frames\">\n", f);
    if (s.total)
        layout(&s, &r->root.n, 0, 0);
    fputs("</g>\n</svg>\n", f);
    return s.oom ? lp_error_set(err, LP_ENOMEM, "report: out of memory") : 0;
}
