# shellcheck shell=bash
# Shared settings of the VM harness (sourced by tests/vm/setup, run, ci).
# shellcheck disable=SC2034  # the variables are used by the scripts that source this file
#
# Everything that setup produces lives under one cache directory; run only reads it.
#   $VM_CACHE/kver                  the guest kernel ABI name chosen by setup (e.g. 6.1.0-56-amd64)
#   $VM_CACHE/kernel/<kver>/        Debian's linux-image package, unpacked (never installed)
#   $VM_CACHE/ksmbd-tools/          Debian's ksmbd-tools package, unpacked
#   $VM_CACHE/build/                linux-source subset used to rebuild ksmbd, cifs and siw
#   $VM_CACHE/initrd.img            busybox initramfs (stage-1 init)
#   $VM_CACHE/runs/<name>/          one directory per VM run: console.log, rc, dmesg, ...

VM_DIR=$(cd "${BASH_SOURCE[0]%/*}/.." && pwd)
VM_REPO=$(cd "$VM_DIR/../.." && pwd)
VM_CACHE=${SMBRDMA_VM_CACHE:-/var/tmp/smbrdma-vm}

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
