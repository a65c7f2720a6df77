#!/usr/bin/env bash
# tests/report/test_report.sh — `frontier report` on a tiny trained run (30 steps, seconds) with
# a fake profile.csv: the page is written, self-contained (no URLs but the SVG namespace, no
# scripts, no external resources), escapes what it shows, has every plot; headless Chromium
# parses it without console errors, finds every <svg id> in the DOM, and its screenshot shows the
# charts (tests/report/render_check.mjs); optional inputs missing -> "not available"; a missing
# RUN_DIR, a corrupt metrics.jsonl line (named file:line), a bad profile.csv, a missing
# summary.json -> exit 2 (bad input) and no report written (an existing one is left as it was).
# Chromium is required (scripts/setup.sh installs Debian's): without it this test fails.
# The screenshot is kept as build/test-artefacts/report/report.png. Runs from the project root.
set -uo pipefail
F=./frontier
fails=0
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fails=$((fails+1)); }
check() {  # description, expected exit code, expected text in output (or ""), command...
  local what=$1 want_rc=$2 want_text=$3; shift 3
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" != "$want_rc" ]; then bad "$what: exit $rc, expected $want_rc"; echo "$out" | head -5; return; fi
  if [ -n "$want_text" ] && ! grep -qF -- "$want_text" <<<"$out"; then
    bad "$what: output lacks '$want_text'"; echo "$out" | head -5; return; fi
  ok "$what"
}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
ART=build/test-artefacts/report
mkdir -p "$ART"
PLOTS="plot-loss plot-lr plot-momentum plot-toks plot-budget plot-kernels plot-roofline"

# A tiny run.
R=$tmp/run
if ! $F train --steps 30 --depth 1 --n-embd 64 --n-head 2 --head-dim 32 --seq-len 64 --device-batch 4 \
     --batch-tokens 512 --eval-tokens 3000 --run-dir "$R" --quiet >"$tmp/train.log" 2>&1; then
  cat "$tmp/train.log"; echo "FAIL: could not train the run"; exit 1
fi
# A fake profile: a few ops, one with empty cost columns, one whose name needs escaping (in the
# page's HTML, and in the CSV: quoted, its quotes doubled, as RFC 4180 has it).
cat >"$R/profile.csv" <<'EOF'
op,calls,total_ms,pct_step,gflop,gbyte,gflops_per_s,gbytes_per_s,intensity,pct_roofline
matmul_nt,120,812.4,41.2,180.5,2.1,222.2,2.58,85.9,57.9
attention,40,310.5,15.7,12.1,0.9,39.0,2.90,13.4,10.2
rmsnorm,160,120.2,6.1,0.3,1.8,2.5,14.97,0.17,51.6
"adamw<b>&""x""",20,60.1,3.0,0.2,1.6,3.3,26.6,0.125,91.8
rope,80,20.0,1.0,,,,,,
EOF

check "report writes RUN_DIR/report.html" 0 "report.html" $F report "$R"
H=$R/report.html
[ -s "$H" ] && head -c 15 "$H" | grep -q '<!DOCTYPE html>' && ok "report.html is an HTML document" || bad "report.html missing or not HTML"
# Self-contained: the only URL is the SVG namespace; nothing is loaded from anywhere.
urls=$(grep -oE 'https?://[^"'"'"' <>)]*' "$H" | grep -vxF 'http://www.w3.org/2000/svg' | sort -u)
[ -z "$urls" ] && ok "no URLs but the SVG namespace" || bad "external URLs in the page: $urls"
if grep -qiE '<script|<link|<iframe|<img|@import|@font-face|src=' "$H"; then
  bad "the page loads or runs something: $(grep -oiE '<script[^>]*>|<link[^>]*>|<iframe|<img|@import|@font-face|src=[^ ]*' "$H" | head -3)"
else ok "no scripts, links, images or imports"; fi
for id in $PLOTS; do grep -q "<svg [^>]*id=\"$id\"" "$H" || bad "no <svg id=\"$id\"> in the page"; done
ok "every plot is in the file"
grep -qF 'adamw&lt;b&gt;&amp;&quot;x&quot;' "$H" && ! grep -qF 'adamw<b>' "$H" && ok "op names are escaped" \
  || bad "the op name adamw<b>&\"x\" is not escaped"
val=$(python3 -c 'import json,sys; print("%.4f" % json.load(open(sys.argv[1]))["val_bpb"])' "$R/summary.json")
grep -qF "$val" "$H" && ok "val_bpb $val is on the page" || bad "val_bpb $val not on the page"
grep -qF "summary.json&#39;s peak_flops" "$H" && ok "without roofline.json the page says where the roofs come from" \
  || bad "no note about the roofline's peaks"

# Rendering in headless Chromium.
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$CHROME" ]; then
  bad "chromium is not installed: run scripts/setup.sh (it installs Debian's chromium) to render the report"
else
  chrome() { timeout 120 "$CHROME" --headless --disable-gpu --no-sandbox --hide-scrollbars --no-first-run \
               --user-data-dir="$tmp/chrome" --enable-logging=stderr --v=0 "$@"; }
  render() {  # html -> checks the DOM and the console; $1 name, $2 file, $3 plot ids
    local name=$1 file=$2 ids=$3
    chrome --dump-dom "file://$(realpath "$file")" >"$tmp/$name.dom" 2>"$tmp/$name.log"
    if [ ! -s "$tmp/$name.dom" ]; then bad "$name: chromium produced no DOM"; tail -5 "$tmp/$name.log"; return; fi
    if grep -E 'CONSOLE|Uncaught' "$tmp/$name.log" >"$tmp/$name.console"; then
      bad "$name: console messages while rendering:"; head -5 "$tmp/$name.console"
    else ok "$name: rendered with no console errors"; fi
    local missing=""
    for id in $ids; do grep -q "<svg [^>]*id=\"$id\"" "$tmp/$name.dom" || missing+=" $id"; done
    [ -z "$missing" ] && ok "$name: every plot is in the DOM ($ids)" || bad "$name: plots missing from the DOM:$missing"
  }
  render full "$H" "$PLOTS"
  rm -f "$ART/report.png"
  chrome --screenshot="$(realpath "$ART")/report.png" --window-size=1200,3000 "file://$(realpath "$H")" >"$tmp/shot.log" 2>&1
  if [ -s "$ART/report.png" ] && node tests/report/render_check.mjs "$ART/report.png" 1200 3000; then
    ok "screenshot $ART/report.png shows the charts"
  else
    bad "screenshot missing or empty ($ART/report.png)"; grep -v dbus "$tmp/shot.log" | tail -5
  fi
fi

# Optional inputs missing, an interrupted run (no val_bpb) with a time budget, roofline.json.
I=$tmp/interrupted
mkdir -p "$I"
cp "$R/metrics.jsonl" "$R/config.json" "$I/"
python3 - "$R/summary.json" "$I/summary.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
del s["val_bpb"]
s["budget_s"], s["stopped_by"] = 10.0, "interrupted"
json.dump(s, open(sys.argv[2], "w"))
EOF
check "report of a run without profile.csv and val_bpb" 0 "" $F report "$I" --out "$tmp/i.html"
grep -q 'not available' "$tmp/i.html" && ! grep -q 'id="plot-kernels"' "$tmp/i.html" \
  && ok "missing profile.csv and val_bpb say 'not available'" || bad "missing inputs are not reported as 'not available'"
grep -qF 'of 10 s' "$tmp/i.html" && ok "budget use is shown against the budget" || bad "no budget figure for a budgeted run"
[ -n "$CHROME" ] && render interrupted "$tmp/i.html" "plot-loss plot-lr plot-momentum plot-toks plot-budget"
echo '{"peak_flops": 2e11, "peak_bw": 1.5e10}' >"$R/roofline.json"
check "report with roofline.json" 0 "" $F report "$R" --out "$tmp/r.html"
grep -qF 'Roofs from roofline.json' "$tmp/r.html" && grep -qF '15.0 GB/s' "$tmp/r.html" \
  && ok "roofline.json's peaks are used" || bad "roofline.json's peaks not used"
rm "$R/roofline.json"

# Errors in what was handed over: exit 2, a clear message, nothing written.
check "missing RUN_DIR" 2 "no such folder" $F report "$tmp/nope"
[ ! -e "$tmp/nope" ] && ok "missing RUN_DIR: nothing created" || bad "missing RUN_DIR: something was created"
B=$tmp/bad
mkdir -p "$B"
cp "$R/summary.json" "$R/config.json" "$B/"
awk 'NR==5 {print "{\"step\":5,\"loss\":"; next} {print}' "$R/metrics.jsonl" >"$B/metrics.jsonl"
check "corrupt metrics.jsonl line" 2 "metrics.jsonl:5:" $F report "$B"
ls "$B" | grep -q report && bad "a corrupt run left $(ls "$B" | grep report)" || ok "corrupt metrics.jsonl: no report.html, no temp file"
echo "previous report" >"$tmp/keep.html"
check "corrupt metrics.jsonl with --out over an existing file" 2 "metrics.jsonl:5:" $F report "$B" --out "$tmp/keep.html"
[ "$(cat "$tmp/keep.html")" = "previous report" ] && ok "the existing file is left as it was" || bad "the existing file was changed"
awk 'NR==3 {print "{\"step\":3}"; next} {print}' "$R/metrics.jsonl" >"$B/metrics.jsonl"
check "metrics.jsonl line without loss" 2 "metrics.jsonl:3: missing or non-numeric \"loss\"" $F report "$B"
cp "$R/metrics.jsonl" "$B/"
printf 'op,calls,total_ms,pct_step\nmatmul,1,2.0,abc\n' >"$B/profile.csv"
check "bad number in profile.csv" 2 "profile.csv:2: column pct_step" $F report "$B"
rm "$B/profile.csv" "$B/summary.json"
check "missing summary.json" 2 "summary.json" $F report "$B"
printf '{\n"val_bpb": 1.2,,\n"steps": 30}\n' >"$B/summary.json"
check "malformed summary.json" 2 "summary.json:2: not valid JSON" $F report "$B"
ls "$B" | grep -q report && bad "an error left a report behind" || ok "errors leave no report behind"
check "no RUN_DIR" 2 "expected one RUN_DIR" $F report
check "unknown flag" 2 "--bogus" $F report "$R" --bogus
check "--help" 0 "RUN_DIR" $F report --help

echo
[ "$fails" -eq 0 ] && echo "all report checks passed" || echo "$fails report check(s) failed"
[ "$fails" -eq 0 ]
