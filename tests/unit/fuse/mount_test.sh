#!/bin/bash
# tests/unit/fuse/mount_test.sh — mount mount.smbrdma, built on the fake
# engine (fake_client.c) that serves a local directory, and drive it with
# ordinary tools.  Usage: mount_test.sh PATH/TO/mount.smbrdma-fake
set -u

BIN=$1
if [ ! -c /dev/fuse ]; then
	echo "SKIP: /dev/fuse does not exist on this machine"
	exit 77
fi
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: mounting needs root"
	exit 77
fi

TMP=$(mktemp -d /tmp/smbrdma-fuse-test.XXXXXX)
ROOT=$TMP/root
MNT=$TMP/mnt
mkdir -p "$ROOT" "$MNT"
export SMBRDMA_FAKE_ROOT=$ROOT
failures=0

cleanup() {
	if grep -q " $MNT " /proc/mounts; then
		umount "$MNT" 2>/dev/null || umount -l "$MNT"
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}
ok() {
	echo "ok   $*"
}
check() { # check DESCRIPTION COMMAND...
	local what=$1
	shift
	if "$@"; then ok "$what"; else fail "$what"; fi
}
mounted() {
	grep -q "^//srv/share $MNT fuse.smbrdma " /proc/mounts
}
do_mount() {
	"$BIN" //srv/share "$MNT" "$@"
}
do_umount() {
	umount "$MNT"
	for _ in $(seq 50); do
		mounted || return 0
		sleep 0.1
	done
	return 1
}
expect_error() { # expect_error NEEDLE ARGS...
	local needle=$1 out rc
	shift
	out=$("$BIN" "$@" 2>&1)
	rc=$?
	if [ $rc -eq 1 ] && [[ $out == *"$needle"* ]]; then
		ok "error for '$*': $out"
	else
		fail "'$*' gave rc $rc and '$out', expected rc 1 and '$needle'"
	fi
}

# ---- failures reported by the daemon's parent --------------------------------
expect_error "mount error: could not mount //srv/share: logon failure" \
	//srv/share "$MNT" -o username=u,password=wrong
expect_error "connection refused by unreachable" //unreachable/share "$MNT"
expect_error "unknown mount option 'bogus'" //srv/share "$MNT" -o bogus=1
expect_error "no share name" //srv "$MNT"
expect_error "mount point" //srv/share "$TMP/does-not-exist"
check "nothing mounted after failures" bash -c "! grep -q ' $MNT ' /proc/mounts"

# ---- a read-write mount ------------------------------------------------------
echo hello >"$ROOT/hello.txt"
mkdir "$ROOT/dir"
check "mount returns 0 (mount(8)-style flags and options)" \
	do_mount -n -s -o username=u,password=p,_netdev,noauto,nofail,defaults,rw
check "/proc/mounts shows //srv/share as fuse.smbrdma" mounted
check "read a server file" test "$(cat "$MNT/hello.txt")" = hello
check "create and read back" bash -c "echo data >'$MNT/new.txt' && test \"\$(cat '$MNT/new.txt')\" = data && test -f '$ROOT/new.txt'"
check "append" bash -c "echo more >>'$MNT/new.txt' && test \"\$(wc -l <'$ROOT/new.txt')\" = 2"
check "mkdir" bash -c "mkdir '$MNT/d1' && test -d '$ROOT/d1'"
check "rename into a directory" bash -c "mv '$MNT/new.txt' '$MNT/d1/moved' && test -f '$ROOT/d1/moved' && ! test -e '$MNT/new.txt'"
check "rename a directory, subtree follows" bash -c "mv '$MNT/d1' '$MNT/d2' && test \"\$(head -1 '$MNT/d2/moved')\" = data"
check "rmdir of a non-empty directory fails" bash -c "! rmdir '$MNT/d2' 2>/dev/null"
check "unlink and rmdir" bash -c "rm '$MNT/d2/moved' && rmdir '$MNT/d2' && ! test -e '$ROOT/d2'"
check "ENOENT" bash -c "! cat '$MNT/nope' 2>/dev/null"
check "mkdir over a file fails with EEXIST" bash -c "mkdir '$MNT/hello.txt' 2>&1 | grep -q 'File exists'"

head -c $((8 * 1024 * 1024 + 12345)) /dev/urandom >"$TMP/big"
check "8 MiB copy in" bash -c "cp '$TMP/big' '$MNT/big' && cmp '$TMP/big' '$ROOT/big'"
check "8 MiB read back" cmp "$TMP/big" "$MNT/big"
check "O_DIRECT read" bash -c "dd if='$MNT/big' of='$TMP/big2' bs=1M iflag=direct status=none && cmp '$TMP/big' '$TMP/big2'"
check "truncate" bash -c "truncate -s 100 '$MNT/big' && test \"\$(stat -c %s '$MNT/big')\" = 100 && test \"\$(stat -c %s '$ROOT/big')\" = 100"
check "set mtime" bash -c "touch -d '2001-02-03 04:05:06' '$MNT/big' && test \"\$(stat -c %Y '$ROOT/big')\" = \"\$(date -d '2001-02-03 04:05:06' +%s)\""
check "chmod a-w sets READONLY" bash -c "chmod a-w '$MNT/big' && test \"\$(stat -c %A '$MNT/big')\" = -r--r--r-- && test \"\$(stat -c %a '$ROOT/big')\" = 444"
check "chmod u+w clears READONLY" bash -c "chmod u+w '$MNT/big' && test \"\$(stat -c %A '$MNT/big')\" = -rw-r--r--"
check "unlink a READONLY file (git's 0444 objects)" bash -c "touch '$MNT/ro' && chmod 444 '$MNT/ro' && rm -f '$MNT/ro' && ! test -e '$ROOT/ro'"
check "create a 0444 file, write it, delete it" bash -c "python3 -c \"import os; fd = os.open('$MNT/obj', os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o444); os.write(fd, b'x'); os.close(fd)\" && test \"\$(stat -c %A '$MNT/obj')\" = -r--r--r-- && rm -f '$MNT/obj'"
check "chown to another user is EPERM" bash -c "! chown 4321 '$MNT/big' 2>/dev/null"
check "df" bash -c "df '$MNT' | grep -q '//srv/share'"

mkdir "$ROOT/many"
for i in $(seq 1 150); do : >"$ROOT/many/f$i"; done
check "list 150 entries (many QUERY_DIRECTORY replies)" test "$(ls "$MNT/many" | wc -l)" = 150
check "ls -la adds . and .." test "$(ls -a "$MNT/many" | wc -l)" = 152
check "rewinddir sees a new entry" python3 - "$MNT" <<'PY'
import os, sys
fd = os.open(sys.argv[1] + "/dir", os.O_RDONLY | os.O_DIRECTORY)
before = os.listdir(fd)
open(sys.argv[1] + "/dir/late", "w").close()
after = os.listdir(fd)
os.close(fd)
sys.exit(0 if before == [] and after == ["late"] else 1)
PY
check "rm -rf a tree" bash -c "rm -rf '$MNT/many' && ! test -e '$ROOT/many'"
check "parallel writers" bash -c "
	for i in 1 2 3 4; do (head -c 3000000 /dev/urandom >'$TMP/p'\$i; cp '$TMP/p'\$i '$MNT/p'\$i; cmp '$TMP/p'\$i '$MNT/p'\$i) & done; wait
	for i in 1 2 3 4; do cmp '$TMP/p'\$i '$ROOT/p'\$i || exit 1; done"
check "umount" do_umount

# ---- options: ro, uid/gid, modes ------------------------------------------------
check "ro mount" do_mount -o ro,uid=1234,gid=5678,file_mode=0600,dir_mode=0700
check "ro shows in /proc/mounts" bash -c "grep ' $MNT ' /proc/mounts | grep -q ' ro,'"
check "writes fail on ro" bash -c "! touch '$MNT/x' 2>/dev/null"
check "uid/gid/file_mode" test "$(stat -c '%u %g %a' "$MNT/hello.txt")" = "1234 5678 600"
check "dir_mode" test "$(stat -c '%a' "$MNT/dir")" = 700
check "umount ro" do_umount

# ---- SIGTERM unmounts -------------------------------------------------------------
check "mount for SIGTERM" do_mount
pid=$(pgrep -f -x "$BIN //srv/share $MNT")
if [ -n "$pid" ]; then
	kill -TERM "$pid"
	for _ in $(seq 50); do mounted || break; sleep 0.1; done
	check "SIGTERM unmounts" bash -c "! grep -q ' $MNT ' /proc/mounts"
else
	fail "daemon pid not found"
fi

echo "$failures failures"
[ "$failures" -eq 0 ]
