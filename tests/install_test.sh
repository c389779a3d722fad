#!/usr/bin/env bash
# kvscope as a user installs it: `cmake --install` into a temporary prefix, and
# the quick start's command (`kvscope eval --decode`, the bundled capture)
# run from another directory; then the .deb (cpack), its dependencies read,
# unpacked and run from where it unpacked. Either must find the bundled data
# it carries, not the source tree's.
set -u
build=$(cd "$1" && pwd) || { echo "FAIL: no build directory $1"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$work/prefix" >/dev/null || fail "cmake --install"
for f in bin/kvscope share/kvscope/assets/real-passkey-4k.safetensors share/kvscope/assets/models/llama-debian-5m/model.safetensors \
         share/kvscope/assets/shapes/llama-3-8b.json share/kvscope/assets/text/licenses.txt; do
  [ -e "$work/prefix/$f" ] || fail "$f is not installed"
done
mkdir "$work/elsewhere" && cd "$work/elsewhere" || fail "no directory to run from"
"$work/prefix/bin/kvscope" eval --decode >out.txt 2>err.txt || fail "the installed quick start: $(tail -1 err.txt)"
grep -q "capture $work/prefix/share/kvscope/assets/real-passkey-4k.safetensors" out.txt ||
  fail "the installed kvscope did not open its own bundled capture: $(head -1 out.txt)"
grep -q "^most coverage" out.txt || fail "the installed quick start printed no summary"
echo "ok: installed under a prefix, the quick start from another directory"
if [ -n "${KVSCOPE_PYTHON:-}" ]; then
  PYTHONPATH="$work/prefix/lib/python3/dist-packages" "$KVSCOPE_PYTHON" -c "import kvscope
c = kvscope.Capture.open('$work/prefix/share/kvscope/assets/real-passkey-4k.safetensors')
r = kvscope.evaluate(c, ['quest'], ['3%'], 'decode', layers=[4], probes=4)
assert kvscope.__file__.startswith('$work/prefix') and r[0]['method'] == 'quest', kvscope.__file__
import os; assert os.path.exists(os.path.join(os.path.dirname(kvscope.__file__), 'kvscope.pyi')), 'no kvscope.pyi'
m = kvscope.Model('$work/prefix/share/kvscope/assets/models/stories260K/stories260K.bin')
assert m.generate('Once upon a time', 8)['ids'], 'no tokens'
p = m.perplexity(length=64, scored=4, methods=['dense'])
assert p['results'] and p['text'].startswith('$work/prefix/share/kvscope/assets'), p['text']" >py.txt 2>&1 ||
    fail "the installed Python module: $(tail -1 py.txt)"
  echo "ok: the installed Python module from PREFIX/lib/python3/dist-packages"
fi

cpack --config "$build/CPackConfig.cmake" -B "$work/deb" >cpack.txt 2>&1 || fail "cpack: $(tail -3 cpack.txt)"
deb=$(ls "$work"/deb/kvscope_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || fail "cpack made no .deb"
depends=$(dpkg-deb -f "$deb" Depends)
case "$depends" in *libvulkan1*) ;; *) fail "the .deb's Depends lacks libvulkan1: $depends" ;; esac
dpkg-deb -x "$deb" "$work/root" || fail "dpkg-deb -x"
"$work/root/usr/bin/kvscope" eval --decode --layers 4 --methods quest --budgets 1% --probes 4 >deb.txt 2>err.txt ||
  fail "the .deb's kvscope: $(tail -1 err.txt)"
grep -q "capture $work/root/usr/share/kvscope/assets/real-passkey-4k.safetensors" deb.txt ||
  fail "the .deb's kvscope did not open its own bundled capture: $(head -1 deb.txt)"
if [ -n "${KVSCOPE_PYTHON:-}" ]; then
  ls "$work"/root/usr/lib/python3/dist-packages/kvscope.*.so >/dev/null 2>&1 || fail "the .deb lacks the Python module"
  [ -f "$work"/root/usr/lib/python3/dist-packages/kvscope.pyi ] || fail "the .deb lacks the module's type stubs"
fi
echo "ok: the .deb ($(basename "$deb"), Depends: $depends) unpacked and run"
