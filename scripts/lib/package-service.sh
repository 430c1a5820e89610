# The installed package's service, run as systemd would run it where systemd is not PID 1: shared
# by scripts/test-package and scripts/test-upgrade (source it; set $me first).
#
#   fail MESSAGE / ok MESSAGE       say it, as $me (fail exits 1)
#   await_line FILE TEXT [SECONDS]  wait (bounded) for a line matching TEXT in FILE
#   service_begin                   the scratch directory ($scratch) and the cleanup on exit
#   service_namespace               a network namespace and a NOTIFY_SOCKET for the daemon
#   start_daemon / stop_daemon      the unit's ExecStart as its User, with its Environment and
#                                   UMask; READY=1 awaited; SIGTERM must give exit 0 and STOPPING=1
#   state_files_shared              every file in /var/lib/lanbridge the service's, the key 0600 and
#                                   the rest 0660 (a release's private 0600 files become the group's)
#   refuses_newer_state             paired.json made one format newer: the daemon refuses it, naming
#                                   both formats, rewrites nothing, and exits with a status the unit
#                                   does not restart on ($refused_status)

fail() { echo "$me: FAIL: $*" >&2; exit 1; }
ok() { echo "$me: ok: $*"; }
# The events here are lines in logs.
await_line() { timeout "${3:-30}" sh -c 'until grep -q -- "$1" "$0" 2>/dev/null; do sleep 0.1; done' "$1" "$2" \
  || { echo "--- $1"; cat "$1" 2>/dev/null; fail "no '$2' in $(basename "$1") within ${3:-30}s"; }; }

service_begin() {
  scratch=$(mktemp -d "/tmp/$me.XXXXXX")
  chmod 0755 "$scratch"  # the service's user must reach the notify socket in it
  pids=(); namespace=""; made_users=(); installed=""
  trap service_cleanup EXIT
}

service_cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  [ -n "$installed" ] && { dpkg --purge lanbridge >/dev/null 2>&1; rm -rf /etc/lanbridge /var/lib/lanbridge; } || true
  [ -n "$namespace" ] && ip netns delete "$namespace" 2>/dev/null || true
  for user in "${made_users[@]}"; do userdel "$user" 2>/dev/null || true; getent group "$user" >/dev/null && groupdel "$user" 2>/dev/null || true; done
  rm -rf "$scratch"
}

# Reads the installed unit; call again after an upgrade replaced it.
service_unit() {
  installed_unit=/lib/systemd/system/lanbridge.service
  setting() { sed -n "s/^$1=//p" "$installed_unit" | tail -1; }
  user=$(setting User); group=$(setting Group); umask_value=$(setting UMask); exec_start=$(setting ExecStart)
  environment=$(setting Environment)
}

service_namespace() {
  service_unit
  namespace="lb${me#test-}$$"
  ip netns add "$namespace"
  ip -n "$namespace" link set lo up
  notify="$scratch/notify.sock"
  (umask 000; exec socat -u UNIX-RECV:"$notify" OPEN:"$scratch/notify.log",creat,append) &
  pids+=($!)
  timeout 10 sh -c 'until [ -S "$0" ]; do sleep 0.05; done' "$notify" || fail "the notify socket did not appear"
}

# Starts the unit's ExecStart as systemd would; sets $daemon. No D-Bus: the host's avahi (if any)
# must never advertise a test daemon on a real interface. With "--no-wait", returns at once.
start_daemon() {
  : > "$scratch/notify.log"
  ip netns exec "$namespace" setpriv --reuid="$user" --regid="$group" --init-groups --no-new-privs \
    env -i PATH=/usr/bin:/bin $environment NOTIFY_SOCKET="$notify" DBUS_SYSTEM_BUS_ADDRESS=unix:path=/nonexistent \
    sh -c "umask $umask_value; exec $exec_start" > "$scratch/daemon.log" 2>&1 &
  daemon=$!
  pids+=($daemon)
  [ "${1:-}" = --no-wait ] && return 0
  await_line "$scratch/notify.log" "READY=1"
  await_line "$scratch/daemon.log" "lanbridge listening"
}

stop_daemon() {
  kill -TERM "$daemon"
  local status=0; wait "$daemon" || status=$?
  [ "$status" = 0 ] || { cat "$scratch/daemon.log"; fail "the daemon exited $status on SIGTERM"; }
  grep -q "STOPPING=1" "$scratch/notify.log" || fail "no STOPPING=1"
}

state_files_shared() {
  local bad
  bad=$(cd /var/lib/lanbridge && stat -c '%U:%G %a %n' -- * | grep -v "^lanbridge:lanbridge 600 identity.key$" \
    | grep -v "^lanbridge:lanbridge 660 " | grep -v " runtime.json$\| [a-z]*\.lock$\| control.sock$" || true)
  [ -z "$bad" ] || { echo "$bad" >&2; return 1; }
}

refuses_newer_state() {
  python3 - /var/lib/lanbridge/paired.json <<'PY'
import json, sys
data = json.load(open(sys.argv[1])); data["version"] += 1; open(sys.argv[1], "w").write(json.dumps(data))
PY
  local newer; newer=$(sha256sum /var/lib/lanbridge/paired.json)
  start_daemon --no-wait
  refused_status=0; wait "$daemon" || refused_status=$?
  grep -q "written by a newer lanbridge" "$scratch/daemon.log" || fail "a newer state: $(cat "$scratch/daemon.log")"
  [ "$(sha256sum /var/lib/lanbridge/paired.json)" = "$newer" ] || fail "the daemon rewrote a newer paired.json"
  grep -q "^RestartPreventExitStatus=.*\b$refused_status\b" "$installed_unit" || fail "exit $refused_status on a newer state, which the unit would restart on"
}
