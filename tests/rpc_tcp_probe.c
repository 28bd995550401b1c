/* tests/rpc_tcp_probe.c — client/rpc_tcp.c against a real server (run by
 * tests/integration/test_rpc_tcp.py; built, not installed).
 *
 *   rpc_tcp_probe ADDR USER PASSWORD LEVEL [DOMAIN]
 *
 * 1. Asks the endpoint mapper on ADDR:135 (no auth) for lsarpc's TCP
 *    port: prints "port N".
 * 2. Binds to the endpoint mapper again with NTLMSSP at LEVEL (5
 *    integrity, 6 privacy, 0 none) and asks the same three times on one
 *    connection (the security context's sequence numbers and RC4 states
 *    must carry from call to call, both ways): "epm-auth port N" each.
 * 3. Connects to lsarpc's port, binds at LEVEL, LsarOpenPolicy2, then
 *    LsarLookupSids(S-1-5-32-544) twice and LsarClose: "name DOMAIN\NAME"
 *    per lookup.  Samba refuses LSA calls that do not come over a named
 *    pipe or ncalrpc (its LSA server faults them with ACCESS_DENIED once
 *    the request has passed the auth checks): that prints "lsa-fault
 *    0xSTATUS" and exits 3.
 * Exit 0 on success; 1 with "error: <step>: <message>" on stderr.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <talloc.h>

#include "client/proto/dcerpc.h"
#include "client/proto/lsarpc.h"
#include "client/proto/smb2_posix.h"
#include "client/rpc_tcp.h"
#include "common/crypto.h"
#include "common/log.h"

#define TIMEOUT_MS 15000

/* Everything (connections included) hangs off it; freed at exit whichever
 * way the probe leaves. */
static void *mem;

static void free_mem(void)
{
	talloc_free(mem);
}

static int fail(const char *what, int rc, const char *err)
{
	fprintf(stderr, "error: %s: %s (%s)\n", what, err, strerror(-rc));
	return 1;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: %s ADDR USER PASSWORD LEVEL [DOMAIN]\n", argv[0]);
		return 2;
	}
	const char *addr = argv[1];
	int level = atoi(argv[4]);
	smb_log_init("rpc_tcp_probe", false, getenv("RPC_TCP_PROBE_DEBUG") ? LOG_DEBUG : LOG_ERR);
	if (smb_crypto_init()) {
		fprintf(stderr, "error: crypto init\n");
		return 1;
	}
	mem = talloc_new(NULL);
	atexit(free_mem);
	char err[256];
	uint16_t port = 0;
	int rc =
	    rpc_tcp_epm_map(mem, addr, &lsarpc_syntax, TIMEOUT_MS, -1, &port, err, sizeof(err));
	if (rc)
		return fail("epm_map", rc, err);
	printf("port %u\n", port);
	fflush(stdout);

	struct rpc_tcp_auth auth = {
	    .user = argv[2],
	    .password = argv[3],
	    .domain = argc > 5 ? argv[5] : "",
	    .workstation = "PROBE",
	    .level = (uint8_t)level,
	};
	uint8_t stub[1024], ans[8192], h[LSARPC_HANDLE_LEN];
	size_t al;
	uint32_t fault = 0, status = 0;
	ssize_t n;

	/* 2: ept_map over an authenticated connection */
	struct rpc_tcp *r;
	rc = rpc_tcp_connect(mem, addr, DCERPC_EPM_PORT, TIMEOUT_MS, -1, &r, err, sizeof(err));
	if (rc)
		return fail("connect epm", rc, err);
	rc =
	    rpc_tcp_bind(r, &dcerpc_epm_syntax, level ? &auth : NULL, TIMEOUT_MS, err, sizeof(err));
	if (rc)
		return fail("bind epm", rc, err);
	for (int i = 0; i < 3; i++) {
		n = dcerpc_epm_map_encode(stub, sizeof(stub), &lsarpc_syntax,
		                          DCERPC_EPM_MAX_TOWERS);
		if (n < 0)
			return fail("encode", (int)n, "ept_map");
		rc = rpc_tcp_call(r, DCERPC_EPM_OPNUM_MAP, stub, (size_t)n, ans, sizeof(ans), &al,
		                  TIMEOUT_MS, &fault, err, sizeof(err));
		if (rc)
			return fail("ept_map (authenticated)", rc, err);
		uint16_t p2 = 0;
		uint8_t ip[4];
		rc = dcerpc_epm_map_decode(ans, al, &lsarpc_syntax, &p2, ip, &status);
		if (rc) {
			snprintf(err, sizeof(err), "decode %d, status 0x%08x", rc, status);
			return fail("ept_map (authenticated)", rc, err);
		}
		printf("epm-auth port %u\n", p2);
		fflush(stdout);
	}
	rpc_tcp_close(r);

	/* 3: lsarpc */
	rc = rpc_tcp_connect(mem, addr, port, TIMEOUT_MS, -1, &r, err, sizeof(err));
	if (rc)
		return fail("connect lsarpc", rc, err);
	rc = rpc_tcp_bind(r, &lsarpc_syntax, level ? &auth : NULL, TIMEOUT_MS, err, sizeof(err));
	if (rc)
		return fail("bind lsarpc", rc, err);
	n = lsarpc_open_policy2_stub_encode(stub, sizeof(stub));
	if (n < 0)
		return fail("encode", (int)n, "LsarOpenPolicy2");
	rc = rpc_tcp_call(r, LSARPC_OPNUM_OPEN_POLICY2, stub, (size_t)n, ans, sizeof(ans), &al,
	                  TIMEOUT_MS, &fault, err, sizeof(err));
	if (rc == -EREMOTEIO) {
		printf("lsa-fault 0x%08x\n", fault);
		fprintf(stderr, "%s\n", err);
		return 3;
	}
	if (rc)
		return fail("LsarOpenPolicy2", rc, err);
	rc = lsarpc_open_policy2_stub_decode(ans, al, h, &status);
	if (rc || status) {
		snprintf(err, sizeof(err), "decode %d, NTSTATUS 0x%08x", rc, status);
		return fail("LsarOpenPolicy2", rc ? rc : -EACCES, err);
	}
	struct smb2_sid admins = {.revision = 1, .nsub = 2, .authority = 5, .sub = {32, 544}};
	for (int i = 0; i < 2; i++) {
		n = lsarpc_lookup_sids_stub_encode(stub, sizeof(stub), h, &admins, 1);
		if (n < 0)
			return fail("encode", (int)n, "LsarLookupSids");
		rc = rpc_tcp_call(r, LSARPC_OPNUM_LOOKUP_SIDS, stub, (size_t)n, ans, sizeof(ans),
		                  &al, TIMEOUT_MS, &fault, err, sizeof(err));
		if (rc == -EREMOTEIO) {
			printf("lsa-fault 0x%08x\n", fault);
			fprintf(stderr, "%s\n", err);
			return 3;
		}
		if (rc)
			return fail("LsarLookupSids", rc, err);
		struct lsarpc_name name;
		rc = lsarpc_lookup_sids_stub_decode(ans, al, &name, 1, &status);
		if (rc || status) {
			snprintf(err, sizeof(err), "decode %d, NTSTATUS 0x%08x", rc, status);
			return fail("LsarLookupSids", rc ? rc : -ENOENT, err);
		}
		printf("name %s\\%s\n", name.domain, name.name);
	}
	n = lsarpc_close_stub_encode(stub, sizeof(stub), h);
	rc = n < 0 ? (int)n
	           : rpc_tcp_call(r, LSARPC_OPNUM_CLOSE, stub, (size_t)n, ans, sizeof(ans), &al,
	                          TIMEOUT_MS, &fault, err, sizeof(err));
	if (rc)
		return fail("LsarClose", rc, err);
	rpc_tcp_close(r);
	return 0;
}
