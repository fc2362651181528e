#!/bin/sh
# tests/rocm/run-inside.sh DIR LIB : the interposition suite inside a chroot (check-rocm.sh),
# against the real HIP library LIB, with the test programs copied to DIR. Mirrors the
# interposition lines of tests/run; the real library finds no device in the chroot, so every
# case expects "no device" from the library it must have bound. Closing line "N passed, N failed".
set -u
dir=$1 lib=$2
cd "$dir"
pass=0 fail=0
stub=$dir/libhipstub.so
t() { # t NAME COMMAND...
    name=$1; shift
    if "$@" >"$dir/$name.log" 2>&1; then
        pass=$((pass + 1)); printf 'ok   %-30s %s\n' "$name" "$(tail -n 1 "$dir/$name.log")"
    else
        fail=$((fail + 1)); printf 'FAIL %-30s\n' "$name"; tail -n 15 "$dir/$name.log" | sed 's/^/     | /'
    fi
}
# The runtime's lookup of the versioned name, seen by the dynamic linker: with the stub first in
# the global scope, the one binding of hipGetDevicePropertiesR0600@hip_6.0 into LIB is the
# runtime's dlvsym (the library's own reference to it binds to the stub, see below).
bindings() {
    LD_DEBUG=bindings ./interpose_exe global "$stub" "$lib" 2>"$dir/bindings.txt" || return 1
    grep "normal symbol \`hipGetDevicePropertiesR0600' \[hip_6.0\]" "$dir/bindings.txt" | grep -q " to $lib " || {
        echo "no binding of hipGetDevicePropertiesR0600@hip_6.0 to $lib"; return 1; }
    # Not the runtime's doing, reported so it is seen: the library's relocations against its own
    # exported names go to the global scope first, so a stub loaded before it takes its internal
    # calls (dlopen with RTLD_DEEPBIND keeps them in the library).
    own=$(grep "binding file $lib .* to $stub " "$dir/bindings.txt" | sed -n "s/.*normal symbol \`\([^']*\)'.*/\1/p" | tr '\n' ' ')
    echo "hipGetDevicePropertiesR0600@hip_6.0 bound in $lib by the runtime; note: the library's own references to ${own:-nothing} bind to the stub"
}
echo "against $(readlink -f "$lib")"
t interpose-global    ./interpose_exe global "$stub" "$lib"
t interpose-preload   env LD_PRELOAD="$stub" ./interpose_exe preload "$stub" "$lib"
t interpose-between   ./interpose_exe between "$stub" "$lib"
t interpose-dlopen-so ./interpose_dlopen "$stub" "$dir/libext.so" "$lib"
t bind-r0600          ./bind_probe "$stub" "$lib"
t bindings-r0600      bindings
t optout-global       env AITER_AOT_GLOBAL_SYMBOLS=1 ./interpose_exe global "$stub" "$lib"
t optout-preload      env AITER_AOT_GLOBAL_SYMBOLS=1 LD_PRELOAD="$stub" ./interpose_exe preload "$stub" "$lib"
t optout-dlopen-so    env AITER_AOT_GLOBAL_SYMBOLS=1 ./interpose_dlopen "$stub" "$dir/libext.so" "$lib"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
