# shellcheck shell=bash
# Shared settings of the VM harness (sourced by tests/vm/setup, run, ci).
# shellcheck disable=SC2034  # the variables are used by the scripts that source this file
#
# Everything that setup produces lives under one cache directory; run only reads it. Every
# guest kernel has its own files, so several (6.12, and 6.1 with KVER=) coexist in one cache.
#   $VM_CACHE/kver                  the ABI name setup prepared last (e.g. 6.12.117+deb12-amd64):
#                                   what run boots unless KVER=... names another
#   $VM_CACHE/kernel/<kver>/        Debian's linux-image package, unpacked (never installed), with
#                                   the rebuilt modules in lib/modules/<kver>/updates/smbrdma/,
#     boot/smbrdma-initrd.img       the busybox initramfs (stage-1 init) for this kernel,
#     .version .ksmbd-tools         its Debian version and the ksmbd-tools version it runs with
#   $VM_CACHE/ksmbd-tools-<ver>/    Debian's ksmbd-tools package <ver>, unpacked
#   $VM_CACHE/kdev/<kver>/          linux-headers + linux-kbuild of that kernel, unpacked
#   $VM_CACHE/build/<kver>/         linux-source subset used to rebuild ksmbd, cifs and siw
#   $VM_CACHE/debs/                 the downloaded packages
#   $VM_CACHE/apt-trixie-backports/ a private apt configuration and state (sources, lists, cache)
#                                   through which setup fetches trixie-backports' 7.x kernel packages;
#                                   the host's own apt sources never name trixie
#   $VM_CACHE/trixie-root/          a minimal Debian 13 (trixie) tree made by debootstrap, the build
#                                   root of a 7.x kernel's modules (its own gcc-14 and glibc)
#   $VM_CACHE/runs/<name>/          one directory per VM run: console.log, rc, dmesg, ...
# A cache made before kernels had their own files has initrd.img and ksmbd-tools/ at its top
# (for the kernel .initrd-stamp names); run still boots it.

VM_DIR=$(cd "${BASH_SOURCE[0]%/*}/.." && pwd)
VM_REPO=$(cd "$VM_DIR/../.." && pwd)
VM_CACHE=${SMBRDMA_VM_CACHE:-/var/tmp/smbrdma-vm}

# Held by every VM run on this machine, whichever cache it boots from (tests/vm/run): the
# default cache's run lock, which runs of that cache took before there was a machine-wide one.
VM_RUN_LOCK=${SMBRDMA_VM_RUN_LOCK:-/var/tmp/smbrdma-vm/.run.lock}

# The guest kernel series setup picks when KVER does not name one.
VM_KSERIES=6.12

# exit code meaning "the VM cannot run on this machine at all"
VM_SKIP_RC=77

vm_log() { printf 'vm: %s\n' "$*" >&2; }
vm_die() { printf 'vm: ERROR: %s\n' "$*" >&2; exit 1; }

# The kernel chosen by setup (or forced with KVER=...).
vm_kver() {
	if [ -n "${KVER:-}" ]; then
		printf '%s\n' "$KVER"
	elif [ -s "$VM_CACHE/kver" ]; then
		cat "$VM_CACHE/kver"
	fi
}

# The series of a Debian ABI name: 6.1.0-56-amd64 -> 6.1, 6.12.117+deb12-amd64 -> 6.12,
# trixie-backports' 7.3.4+deb13-amd64 -> 7.3.
vm_kseries() {
	local v
	case $1 in
	6.1.0-*-amd64) echo 6.1 ;;
	6.12.*+deb12*-amd64) echo 6.12 ;;
	7.*.*+deb13*-amd64) v=${1%%+*} && echo "${v%.*}" ;;
	*) return 1 ;;
	esac
}
