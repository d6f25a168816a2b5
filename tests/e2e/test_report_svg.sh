#!/bin/sh
# e2e: the SVG flame graph of `lbr2prof report --format=svg` opened in
# headless Chromium (Debian's chromium). The page's script runs, then the
# DOM is dumped and checked against the SVG file itself:
#   - plain load: the script marked the page ready and saw every frame;
#     every function of the report has a frame with a <title>;
#   - "#zoom=fN&search=RE": the zoomed frame spans the full width, its
#     ancestors are dimmed, frames outside it are hidden, children are
#     rescaled; the search marked exactly the frames whose name matches and
#     reports the share Python computes from the file.
# Skips (77) only when chromium is not installed (scripts/install-deps.sh
# installs it).
set -eu
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CHROMIUM" ] || { echo "skip: chromium not installed"; exit 77; }
command -v clang-19 >/dev/null 2>&1 || { echo "skip: clang-19 not installed"; exit 77; }
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
cd "$WORK"

dump() { # url, output
    HOME="$WORK" timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic \
        --no-first-run --disable-background-networking --disable-component-update \
        --disable-sync --disable-dev-shm-usage --user-data-dir="$WORK/chrome-$2" \
        --virtual-time-budget=2000 --dump-dom "$1" > "$2" 2> "$2.err" || {
        echo "chromium failed:"; tail -5 "$2.err"; exit 1; }
    [ -s "$2" ] || { echo "empty DOM dump:"; tail -5 "$2.err"; exit 1; }
}

cat > fg.c <<'C'
#include <stdio.h>
#include <stdlib.h>
static volatile unsigned sink;
__attribute__((noinline)) unsigned fa(unsigned n) { unsigned s = 0; for (unsigned i = 0; i < n; i++) s += i * sink; return s; }
__attribute__((noinline)) unsigned fb(unsigned n) { return fa(n) + fa(n / 2); }
__attribute__((noinline)) unsigned fc(unsigned n) { return n ? fb(n) + fc(n - 1) : 0; }
int main(int argc, char **argv) { unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 60; printf("%u\n", fc(n) + fa(n * 40)); return 0; }
C
clang-19 -g -O1 -fno-omit-frame-pointer -fno-optimize-sibling-calls -o fg fg.c
"$LBR2PROF" record --simulate -c 97 -o fg.data -- ./fg > /dev/null 2> rec.err
"$LBR2PROF" report fg.data --format=svg --title="t&<est>" -o fg.svg
"$LBR2PROF" report fg.data --format=json -o fg.json
# The file is well-formed XML before any browser sees it.
"$PY" -c 'import xml.dom.minidom, sys; xml.dom.minidom.parse(sys.argv[1])' fg.svg

# Pick the frame to zoom into and the search term from the file.
"$PY" - <<'PY' > params.txt
import re
svg = open("fg.svg").read()
frames = re.findall(r'<g class="f" id="(f\d+)" data-d="(\d+)" data-x="([\d.]+)" data-w="([\d.]+)" '
                    r'data-c="(\d+)" data-t="(\d+)" data-s="(\d+)" data-n="([^"]*)"', svg)
# zoom: a frame of depth >= 2 with a child and a sibling (so that the zoom
# both rescales and hides frames)
for i, (fid, d, x, w, c, t, s, name) in enumerate(frames):
    kids = frames[i + 1:i + 2]
    sib = [f for f in frames if f[1] == d and f[0] != fid]
    if int(d) >= 2 and kids and int(kids[0][1]) == int(d) + 1 and sib:
        print(fid, name)
        break
PY
read zid zname < params.txt
[ -n "$zid" ] || { echo "no frame to zoom into"; exit 1; }
term='^f[ab]$'

dump "file://$WORK/fg.svg" plain.html
enc=$("$PY" -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$term")
dump "file://$WORK/fg.svg#zoom=$zid&search=$enc" zoom.html

"$PY" - "$zid" "$term" <<'PY'
import re, sys, json
zid, term = sys.argv[1], sys.argv[2]
svg = open("fg.svg").read()
pat = re.compile(r'<g class="f" id="(f\d+)" data-d="(\d+)" data-x="([\d.]+)" data-w="([\d.]+)" '
                 r'data-c="(\d+)" data-t="(\d+)" data-s="(\d+)" data-n="([^"]*)"')
frames, order = {}, []
for m in pat.finditer(svg):
    frames[m.group(1)] = dict(d=int(m.group(2)), x=float(m.group(3)), w=float(m.group(4)),
                              c=int(m.group(5)), t=int(m.group(6)), n=m.group(8))
    order.append(m.group(1))
doc = json.load(open("fg.json"))
assert frames and frames["f0"]["t"] == doc["total"], (len(frames), doc["total"])

# The tree from the file's order alone (frames are written depth first): a
# frame's parent is the closest earlier frame one level up. Zooming must
# follow this tree, whatever rounding did to the pixel geometry.
stack = []
for fid in order:
    f = frames[fid]
    del stack[f["d"]:]
    f["p"] = stack[-1] if stack else None
    stack.append(fid)
scale = 1180.0 / frames["f0"]["t"]
for fid, f in frames.items():
    assert abs(f["x"] - (10 + f["c"] * scale)) < 0.006 and abs(f["w"] - f["t"] * scale) < 0.006, (fid, f)
    if f["p"]:
        p = frames[f["p"]]
        assert p["c"] <= f["c"] and f["c"] + f["t"] <= p["c"] + p["t"], (fid, f, p)

def chain(fid):
    out = []
    while fid:
        out.append(fid)
        fid = frames[fid]["p"]
    return out

def root_attrs(html):
    m = re.search(r"<svg[^>]*>", html)
    assert m, "no <svg> element in the dump"
    return dict(re.findall(r'([\w-]+)="([^"]*)"', m.group(0)))

def dom_frames(html):
    out = {}
    for m in re.finditer(r'<g ([^>]*)><title>(.*?)</title><rect ([^>]*?)/?>(?:</rect>)?'
                         r'<text ([^>]*?)(?:/>|>(.*?)</text>)</g>', html):
        ga = dict(re.findall(r'([\w-]+)="([^"]*)"', m.group(1)))
        ra = dict(re.findall(r'([\w-]+)="([^"]*)"', m.group(3)))
        out[ga["id"]] = dict(g=ga, r=ra, title=m.group(2), label=m.group(5) or "")
    return out

plain = open("plain.html").read()
a = root_attrs(plain)
assert a.get("data-ready") == "1", a
assert int(a["data-frames"]) == len(frames), (a["data-frames"], len(frames))
pd = dom_frames(plain)
assert len(pd) == len(frames), (len(pd), len(frames))
titles = " ".join(f["title"] for f in pd.values())
for fn in doc["functions"]:
    assert fn["name"] in titles, "no frame for " + fn["name"]
assert "t&amp;&lt;est&gt;" in plain, "title not escaped"
assert all("display" not in f["g"] for f in pd.values()), "hidden frames without zoom"

zoom = open("zoom.html").read()
a = root_attrs(zoom)
assert a.get("data-ready") == "1" and a.get("data-zoom") == zid, a
zd = dom_frames(zoom)
z = frames[zid]
assert zd[zid]["r"]["x"] == "10.00" and zd[zid]["r"]["width"] == "1180.00", zd[zid]["r"]
ancestors = set(chain(frames[zid]["p"]))
shown = hidden = parents = 0
for fid, f in frames.items():
    g = zd[fid]
    if f["d"] < z["d"]:
        anc = fid in ancestors
        assert anc == ("display" not in g["g"]), (fid, "ancestor" if anc else "not an ancestor")
        if anc:
            assert "parent" in g["g"]["class"] and g["r"]["width"] == "1180.00", (fid, g)
            parents += 1
    else:
        inside = zid in chain(fid)
        assert inside == ("display" not in g["g"]), (fid, "inside" if inside else "outside")
        if inside:
            want = f["t"] * 1180.0 / z["t"]
            assert abs(float(g["r"]["width"]) - want) < 0.02, (fid, g["r"], want)
            shown += 1
        else:
            hidden += 1
assert parents == z["d"] and shown >= 2 and hidden >= 1, (parents, shown, hidden)
# search: frames (depth > 0) whose name matches, share of the outermost ones
rx = re.compile(term)
match = sorted(fid for fid, f in frames.items() if f["d"] > 0 and rx.search(f["n"]))
got = sorted(fid for fid, g in zd.items() if "match" in g["g"]["class"].split())
assert got == match and match, (got, match)
# nested matches count once: a match is counted unless a matching frame
# is among its ancestors
total = sum(frames[f]["t"] for f in match
            if not any(a in match for a in chain(frames[f]["p"])))
pct = "%.2f" % (100.0 * total / frames["f0"]["t"])
assert a["data-matches"] == str(len(match)) and a["data-matched"] == pct, (a, pct)
assert all(zd[f]["r"]["fill"] == "rgb(230,0,230)" for f in match)
print("ok: %d frames; zoom %s: %d shown, %d hidden, %d parents; search %r: %d frames, %s%%"
      % (len(frames), zid, shown, hidden, parents, term, len(match), pct))
PY
echo "ok"
