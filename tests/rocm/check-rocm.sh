#!/bin/sh
# tests/rocm/check-rocm.sh ROOT BUILDDIR : the interposition suite against the real HIP runtimes
# of ROCm 6.4 (libamdhip64-6, Debian sid) and ROCm 7.2 (libamdhip64-7, Debian experimental).
# They need a newer glibc than Debian 12's, so each runs in a minimal sid chroot under CACHE
# (default ~/.cache/aiter-aot/rocm-sid; AITER_AOT_ROCM_CHROOT overrides it): CACHE/6.4 is built
# with debootstrap, CACHE/7.2 is a copy of it with ROCm 7.2 added (the two HIP runtimes need
# different libhsa-runtime64-1, so they cannot share one). A chroot whose completion mark is
# missing or names other packages is rebuilt; a complete one is reused. Needs root (chroot), and
# the Debian mirror when a chroot is built; the closing line is "N passed, N failed", as in tests/run.
set -eu
root=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
cache=${AITER_AOT_ROCM_CHROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/aiter-aot/rocm-sid}
apt_opts="-o Acquire::Check-Valid-Until=false -o APT::Install-Recommends=false -o Dpkg::Use-Pty=0 -q -y"
start=$(date +%s)

# the Debian mirror this machine uses (deb822 URIs: or one-line deb entries), else the default
mirror() {
    m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
        sed -n 's|^URIs: *\(https\{0,1\}://[^ ]*/debian\)/*$|\1|p; s|^deb  *\(\[[^]]*\] *\)\{0,1\}\(https\{0,1\}://[^ ]*/debian\)/* .*|\2|p' | head -n1)
    echo "${m:-http://deb.debian.org/debian}"
}

in_chroot() { # in_chroot DIR COMMAND...
    d=$1; shift
    chroot "$d" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive LC_ALL=C "$@"
}

complete() { [ -f "$1/.aiter-aot-complete" ] && [ "$(cat "$1/.aiter-aot-complete")" = "$2" ]; }


# chroot DIR with PACKAGES installed from RELEASE: debootstrap for the first (FROM empty), a copy
# of FROM otherwise; built in DIR.tmp and renamed when complete.
make_chroot() { # make_chroot DIR FROM RELEASE PACKAGES
    dir=$1 from=$2 release=$3 pkgs=$4
    if complete "$dir" "$pkgs"; then echo "check-rocm: reusing $dir ($pkgs)"; return; fi
    t0=$(date +%s)
    rm -rf "$dir" "$dir.tmp"
    mkdir -p "$(dirname "$dir")"
    if [ -z "$from" ]; then
        command -v debootstrap >/dev/null || { echo "check-rocm: debootstrap missing (tools/install-deps installs it)"; exit 1; }
        url=$(mirror)
        echo "check-rocm: debootstrap --variant=minbase sid $dir from $url"
        debootstrap --variant=minbase sid "$dir.tmp" "$url" >"$dir.debootstrap.log" 2>&1 ||
            { tail -n 20 "$dir.debootstrap.log"; exit 1; }
        printf 'deb %s sid main\ndeb %s experimental main\n' "$url" "$url" >"$dir.tmp/etc/apt/sources.list"
        echo "check-rocm: debootstrap took $(( $(date +%s) - t0 )) s"
    else
        cp -a "$from" "$dir.tmp"
        rm -f "$dir.tmp/.aiter-aot-complete"
    fi
    cp /etc/resolv.conf "$dir.tmp/etc/resolv.conf" 2>/dev/null || true
    in_chroot "$dir.tmp" apt-get $apt_opts update >"$dir.apt.log" 2>&1 &&
        in_chroot "$dir.tmp" apt-get $apt_opts -t "$release" install $pkgs >>"$dir.apt.log" 2>&1 &&
        in_chroot "$dir.tmp" apt-get clean >>"$dir.apt.log" 2>&1 || { tail -n 20 "$dir.apt.log"; exit 1; }
    echo "$pkgs" >"$dir.tmp/.aiter-aot-complete"
    mv "$dir.tmp" "$dir"
    echo "check-rocm: $dir ready in $(( $(date +%s) - t0 )) s"
}

[ "$(id -u)" = 0 ] || { echo "check-rocm: needs root (debootstrap, chroot)"; exit 1; }
make_chroot "$cache/6.4" "" sid "libamdhip64-6"
make_chroot "$cache/7.2" "$cache/6.4" experimental "libamdhip64-7 libamdhip64-dev"

pass=0 fail=0
count() { # count LOG: adds its closing "N passed, N failed" to the totals
    last=$(tail -n 1 "$1")
    p=$(echo "$last" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
    f=$(echo "$last" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
    pass=$((pass + ${p:-0})) fail=$((fail + ${f:-1}))
}
log=$build/tests/rocm/group.log
# hipDeviceProp_tR0600 as the runtime reads it, against ROCm 7.2's own header (host compiler;
# only the chroot's hip/ headers are put on the include path)
mkdir -p "$build/tests/rocm/include"
ln -sfn "$cache/7.2/usr/include/hip" "$build/tests/rocm/include/hip"
echo "== hipDeviceProp_tR0600 against $(in_chroot "$cache/7.2" dpkg-query -W -f='${Package} ${Version}' libamdhip64-dev)"
if ${CC:-cc} -std=c11 -Wall -Werror -D__HIP_PLATFORM_AMD__=1 -I"$build/tests/rocm/include" \
        -o "$build/tests/rocm/test_hip_layout_r0600" "$root/tests/rocm/test_hip_layout_r0600.c"; then
    "$build/tests/rocm/test_hip_layout_r0600" | tee "$log"
    count "$log"
else
    echo "FAIL the layout test does not compile against ROCm 7.2's HIP headers"; fail=$((fail + 1))
fi

# The host-built test programs run inside each chroot (its newer glibc runs them): copied in.
for v in 6.4:libamdhip64-6:6 7.2:libamdhip64-7:7; do
    dir=$cache/${v%%:*} pkg=$(echo "$v" | cut -d: -f2) so=libamdhip64.so.${v##*:}
    work=$dir/tmp/aiter-aot-check
    rm -rf "$work" && mkdir -p "$work"
    cp "$build/tests/interpose/interpose_exe" "$build/tests/interpose/interpose_dlopen" "$build/tests/interpose/libext.so" \
        "$build/tests/interpose/libhipstub.so" "$build/tests/rocm/bind_probe" "$root/tests/rocm/run-inside.sh" "$work/"
    echo "== $(in_chroot "$dir" dpkg-query -W -f='${Package} ${Version}' "$pkg") (chroot $dir)"
    lib=$(in_chroot "$dir" sh -c "ls /usr/lib/*/$so")
    in_chroot "$dir" sh /tmp/aiter-aot-check/run-inside.sh /tmp/aiter-aot-check "$lib" | tee "$log"
    count "$log"
done
echo "check-rocm took $(( $(date +%s) - start )) s"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
