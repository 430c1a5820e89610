# Sourced by the arm64 scripts: the toolchain's folder (made or found by scripts/arm64/toolchain)
# and `in_build_root`, which runs a command in its sid build root with this checkout at /src.
#
#   in_build_root [SECONDS] -- COMMAND...   # SECONDS: a bound, after which every process it started is killed
#
# The command runs in a mount and PID namespace of its own: /proc, /sys, /dev, the checkout and
# the Swift package copies are mounted for it alone, and when it ends (or its bound does) the
# kernel ends every process it left and every mount with it.
arm64_home=$(scripts/arm64/toolchain | tail -n 1)
[ -d "$arm64_home/build-root" ] || { echo "arm64: the toolchain did not come up" >&2; exit 70; }
arm64_sdk=(--swift-sdks-path /sdks --swift-sdk lanbridge-aarch64)
# Debian's swiftlang ships _Testing_Foundation's module but not its library: test builds leave the
# cross-import overlay out (README, "arm64").
arm64_test_flags=(-Xswiftc -Xfrontend -Xswiftc -disable-cross-import-overlays)

in_build_root() {
  local bound=0
  if [ "$1" != -- ]; then bound=$1; shift; fi
  shift  # --
  local root="$arm64_home/build-root"
  timeout --kill-after=10 "$( [ "$bound" -gt 0 ] && echo "$bound" || echo 0)" \
    unshare --mount --pid --fork --kill-child --propagation private -- bash -ec '
      root=$1; repo=$2; shift 2
      mount -t proc proc "$root/proc"
      mount --rbind /sys "$root/sys"
      mount --rbind /dev "$root/dev"
      mkdir -p "$root/src" "$root/opt/swift-packages"
      mount --bind "$repo" "$root/src"
      [ ! -d /opt/swift-packages ] || mount --bind /opt/swift-packages "$root/opt/swift-packages"
      [ ! -f /etc/gitconfig ] || cp /etc/gitconfig "$root/etc/gitconfig"
      exec chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        PKG_CONFIG_SYSROOT_DIR=/sysroot PKG_CONFIG_PATH=/sysroot/usr/lib/aarch64-linux-gnu/pkgconfig:/sysroot/usr/share/pkgconfig \
        ${SOURCE_DATE_EPOCH:+SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH} ${LANBRIDGE_MAINTAINER:+"LANBRIDGE_MAINTAINER=$LANBRIDGE_MAINTAINER"} \
        bash -ec "cd /src && git config --global --add safe.directory /src && $*"
    ' bash "$root" "$PWD" "$@"
}
