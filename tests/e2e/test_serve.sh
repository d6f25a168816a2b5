#!/bin/sh
# e2e: `lbr2prof serve` on a random loopback port, real HTTP requests with
# curl: T002 answers (equal to the CLI's), 400 titles, 405/404, concurrent
# requests, an oversized body (413, with and without Content-Length), then
# SIGTERM. Every curl call is bounded by --max-time.
set -eu
for t in curl python3; do
    command -v $t >/dev/null 2>&1 || { echo "skip: $t not installed"; exit 77; }
done
# The system python3 (a version-manager shim can cost 0.3 s per start).
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
cd "$WORK"
TP1=D48F191186D67E69DF025AD71FB91E1F0
TP2=0905AE80CEE75A33E3CAB61C274274DE0
mkdir -p store/testproj/$TP1 store/testproj/$TP2
cat > store/testproj/$TP1/testproj.sym <<S
MODULE Linux x86_64 $TP1 testproj
FILE 0 /home/willkg/projects/testproj/src/main.rs
FUNC 5380 44 0 testproj::main
5380 9 1 0
5389 36 2 0
53bf 5 3 0
S
cat > store/testproj/$TP2/testproj.sym <<S
MODULE Linux x86_64 $TP2 testproj
INFO CODE_ID 80AE0509E7CE335AE3CAB61C274274DE96049B64
FILE 0 /home/willkg/projects/testproj/src/main.rs
FILE 1 /rustc/e092d0b6b43f2de967af0887873151bb1c0b18d3/library/core/src/fmt/mod.rs
FILE 2 /home/willkg/projects/testproj/src/support.rs
INLINE_ORIGIN 0 testproj::support::middle
INLINE_ORIGIN 1 testproj::support::inner
INLINE_ORIGIN 2 core::fmt::Arguments::new_v1
FUNC 7a40 85 0 testproj::main
INLINE 0 4 0 0 7a40 7d
INLINE 1 2 2 1 7a40 49
INLINE 2 7 2 2 7a40 3a
INLINE 1 3 2 2 7a89 31
7a40 7 3 0
7a47 33 392 1
7a7a f 7 2
7a89 31 392 1
7aba 3 3 2
7abd 8 5 0
7a82 5 5 2
S

# An ELF module too (loaded on first use, by several threads at once).
ELFID=""
if command -v clang-19 >/dev/null 2>&1 && command -v llvm-nm-19 >/dev/null 2>&1; then
    printf 'int twice(int x) { return 2 * x; }\nint main(int c, char **v) { (void)v; return twice(c); }\n' > small.c
    clang-19 -g -O1 -o small small.c
    ELFID=$("$LBR2PROF" dump-syms --id small | sed -n 's/^debug_id //p')
    TWICE=$(( 0x$(llvm-nm-19 small | awk '$3 == "twice" { print $1 }') ))
    mkdir -p bins && cp small bins/
fi
mkdir -p bins
"$LBR2PROF" serve --listen 127.0.0.1:0 --symbols store --binary bins --port-file port \
    --max-body 65536 --threads 4 2> serve.log &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
i=0
while [ ! -s port ]; do
    i=$((i + 1))
    [ $i -le 100 ] || { echo "server did not start"; cat serve.log; exit 1; }
    kill -0 $pid 2>/dev/null || { echo "server exited"; cat serve.log; exit 1; }
    sleep 0.05
done
PORT=$(cat port)
URL=http://127.0.0.1:$PORT/symbolicate
echo "server pid $pid on port $PORT"

post() { # path body-file out-file -> prints the HTTP status
    curl -s --max-time 10 -o "$3" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
        --data-binary "@$2" "$URL/$1"
}
same_json() { "$PY" -c 'import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:3]); sys.exit(a!=b)' "$1" "$2"; }

# T002-1 and T002-3 over HTTP, equal to the expected answer and to the CLI.
printf '%s' '{"jobs":[{"memoryMap":[["testproj","'$TP1'"],["libc.so","12345"]],"stacks":[[[0,21376],[0,21392],[0,1000]]]}]}' > r1.json
cat > e1.json <<J
{"results":[{"stacks":[[
  {"frame":0,"module":"testproj","module_offset":"0x5380","function":"testproj::main","function_offset":"0x0","file":"/home/willkg/projects/testproj/src/main.rs","line":1},
  {"frame":1,"module":"testproj","module_offset":"0x5390","function":"testproj::main","function_offset":"0x10","file":"/home/willkg/projects/testproj/src/main.rs","line":2},
  {"frame":2,"module":"testproj","module_offset":"0x3e8"}]],
  "found_modules":{"testproj/$TP1":true,"libc.so/12345":null}}]}
J
[ "$(post v5 r1.json o1.json)" = 200 ]
same_json o1.json e1.json || { echo "T002-1 over HTTP:"; cat o1.json; exit 1; }
"$LBR2PROF" symbolicate --symbols store r1.json > c1.json
same_json o1.json c1.json

printf '%s' '{"jobs":[{"memoryMap":[["testproj","'$TP2'"]],"stacks":[[[0,31354]]]}]}' > r3.json
[ "$(post v5 r3.json o3.json)" = 200 ]
grep -q '"inlines":\[{"function":"testproj::support::inner"' o3.json

# Debug: true adds the service's statistics; without it there are none.
curl -s --max-time 10 -o od.json -H 'Debug: true' -X POST --data-binary @r1.json "$URL/v5"
"$PY" -c 'import json,sys; d=json.load(open("od.json"))["debug"]; assert d["modules"]["count"] == 1 and d["cache_lookups"]["count"] == 1, d'
! grep -q '"debug"' o1.json

# v4 (T002-5).
printf '%s' '{"memoryMap":[["testproj","'$TP1'"],["libc.so","12345"]],"stacks":[[[0,21376],[1,4096]]],"version":4}' > r5.json
[ "$(post v4 r5.json o5.json)" = 200 ]
printf '%s' '{"symbolicatedStacks":[["testproj::main (in testproj)","0x1000 (in libc.so)"]],"knownModules":[true,false]}' > e5.json
same_json o5.json e5.json

# Errors: 400 with the service's title, 405, 404, CORS header.
printf '' > empty.json
[ "$(post v5 empty.json oe.json)" = 400 ]
grep -q '"title": *"Payload is not valid JSON"' oe.json
printf '%s' '{"memoryMap":[["../../etc/passwd","AB"]],"stacks":[[[0,1]]]}' > rt.json
[ "$(post v5 rt.json ot.json)" = 400 ]
grep -q 'module index 0 has an invalid debug_filename' ot.json
[ "$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' "$URL/v5")" = 405 ]
[ "$(post v6 r1.json /dev/null)" = 404 ]
curl -s --max-time 10 -D hdr.txt -o /dev/null -X POST --data-binary @r1.json "$URL/v5"
grep -qi '^Access-Control-Allow-Origin: \*' hdr.txt

# Oversized bodies: 413, with Content-Length and chunked.
"$PY" -c 'import json; print(json.dumps({"memoryMap":[],"stacks":[[[-1,i] for i in range(20000)]]}))' > big.json
[ "$(post v5 big.json ob.json)" = 413 ]
[ "$(curl -s --max-time 10 -o ob2.json -w '%{http_code}' -X POST -H 'Transfer-Encoding: chunked' \
      --data-binary @big.json "$URL/v5")" = 413 ]

# Concurrent requests: 24 at once, each must get the right answer.
n=0; curls=""
while [ $n -lt 24 ]; do
    if [ $((n % 2)) -eq 0 ]; then f=r1.json; else f=r3.json; fi
    curl -s --max-time 20 -o "c$n.out" -X POST --data-binary "@$f" "$URL/v5" &
    curls="$curls $!"
    n=$((n + 1))
done
for c in $curls; do wait "$c"; done
n=0
while [ $n -lt 24 ]; do
    if [ $((n % 2)) -eq 0 ]; then same_json "c$n.out" e1.json; else cmp -s "c$n.out" o3.json; fi \
        || { echo "concurrent request $n wrong:"; cat "c$n.out"; exit 1; }
    n=$((n + 1))
done
kill -0 $pid

# Concurrent first uses of the ELF module: every answer names the function.
if [ -n "$ELFID" ]; then
    printf '{"memoryMap":[["small","%s"]],"stacks":[[[0,%s]]]}' "$ELFID" "$TWICE" > re.json
    n=0; curls=""
    while [ $n -lt 8 ]; do
        curl -s --max-time 20 -o "e$n.out" -X POST --data-binary @re.json "$URL/v5" &
        curls="$curls $!"
        n=$((n + 1))
    done
    for c in $curls; do wait "$c"; done
    n=0
    while [ $n -lt 8 ]; do
        grep -q '"function":"twice","function_offset":"0x0","file":"[^"]*small.c","line":1' "e$n.out" \
            || { echo "ELF request $n wrong:"; cat "e$n.out"; exit 1; }
        n=$((n + 1))
    done
fi

# A non-loopback address is refused unless allowed.
set +e
"$LBR2PROF" serve --listen 0.0.0.0:0 --symbols store 2> refuse.txt; st=$?
set -e
[ $st -eq 2 ] && grep -q 'not a loopback address' refuse.txt

kill -TERM $pid
st=0; wait $pid || st=$?
trap - EXIT
[ $st -eq 0 ] || { echo "server exit status $st"; cat serve.log; exit 1; }
grep -q 'stopped' serve.log
echo PASS
