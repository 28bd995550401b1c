/* client/dial_race.c — transport=auto: TCP and QUIC race (dial_race.h).
 *
 * A race is shared by the caller and its two contestants, freed by whoever
 * leaves it last (refs, under lock).  The first contestant to connect
 * becomes the winner; one that connects after that closes its own conn.
 */
#include "client/dial_race.h"
#include "client/conn.h"
#include "client/transport_quic.h"
#include "common/log.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct race {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	int refs;     /* caller + contestants still running; under lock */
	int finished; /* contestants done; under lock */
	bool decided; /* the caller took a result or gave up; under lock */
	struct smb_conn *winner;
	enum smb_transport_kind winner_kind;
	int err_tcp, err_quic;
	int cancel_fd; /* eventfd: makes the QUIC handshake give up */
	struct ev_loop *loop;
	struct smb_dial_racers *racers;
	struct smb_dial_spec spec;
	struct smb_quic_params quic;
	struct sockaddr_storage tcp_addr, quic_addr;
	char *tcp_peer, *quic_peer;
};

struct contestant {
	struct race *r;
	bool quic;
};

void smb_dial_racers_init(struct smb_dial_racers *r)
{
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cv, NULL);
	r->running = 0;
}

void smb_dial_racers_wait(struct smb_dial_racers *r)
{
	pthread_mutex_lock(&r->lock);
	while (r->running)
		pthread_cond_wait(&r->cv, &r->lock);
	pthread_mutex_unlock(&r->lock);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->lock);
}

static void race_free(struct race *r)
{
	close(r->cancel_fd);
	free(r->tcp_peer);
	free(r->quic_peer);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

/* Drop one reference (lock held on entry, released here). */
static void race_put_locked(struct race *r)
{
	bool last = --r->refs == 0;
	pthread_mutex_unlock(&r->lock);
	if (last)
		race_free(r);
}

static void *contestant_main(void *arg)
{
	struct contestant *ct = arg;
	struct race *r = ct->r;
	bool quic = ct->quic;
	free(ct);
	struct smb_dial_racers *racers = r->racers;
	struct smb_conn *conn = NULL;
	const struct sockaddr *addr =
	    (const struct sockaddr *)(quic ? &r->quic_addr : &r->tcp_addr);
	int err = smb_conn_open(r->loop, quic ? SMB_TRANSPORT_QUIC : SMB_TRANSPORT_TCP,
	                        quic ? &r->quic : NULL, addr, r->spec.addrlen,
	                        quic ? r->quic_peer : r->tcp_peer, r->spec.connect_timeout_ms,
	                        r->spec.timeout_ms, quic ? -1 : r->spec.cancel_fd, &conn);
	if (err == -ECANCELED && !quic) {
		/* the client is closing: the QUIC contestant gives up too */
		uint64_t one = 1;
		if (write(r->cancel_fd, &one, sizeof(one)) < 0)
			smb_debug("dial race: cannot cancel the QUIC contestant: %s",
			          strerror(errno));
	}
	pthread_mutex_lock(&r->lock);
	struct smb_conn *loser = NULL;
	if (err) {
		*(quic ? &r->err_quic : &r->err_tcp) = err;
	} else if (!r->winner && !r->decided) {
		r->winner = conn;
		r->winner_kind = quic ? SMB_TRANSPORT_QUIC : SMB_TRANSPORT_TCP;
	} else {
		loser = conn;
	}
	r->finished++;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->lock);
	if (loser) {
		smb_debug("%s: %s connected after the race was decided; closing it",
		          quic ? r->quic_peer : r->tcp_peer, quic ? "QUIC" : "TCP");
		smb_conn_close(loser);
	}
	pthread_mutex_lock(&r->lock);
	race_put_locked(r);
	/* r may be gone: only racers from here on. */
	pthread_mutex_lock(&racers->lock);
	racers->running--;
	pthread_cond_broadcast(&racers->cv);
	pthread_mutex_unlock(&racers->lock);
	return NULL;
}

static int start_contestant(struct race *r, bool quic)
{
	struct contestant *ct = malloc(sizeof(*ct));
	if (!ct)
		return -ENOMEM;
	ct->r = r;
	ct->quic = quic;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_t th;
	pthread_mutex_lock(&r->racers->lock);
	r->racers->running++;
	pthread_mutex_unlock(&r->racers->lock);
	pthread_mutex_lock(&r->lock);
	r->refs++;
	pthread_mutex_unlock(&r->lock);
	int rc = pthread_create(&th, &attr, contestant_main, ct);
	pthread_attr_destroy(&attr);
	if (rc) {
		free(ct);
		pthread_mutex_lock(&r->lock);
		r->refs--;
		r->finished++;
		*(quic ? &r->err_quic : &r->err_tcp) = -rc;
		pthread_mutex_unlock(&r->lock);
		pthread_mutex_lock(&r->racers->lock);
		r->racers->running--;
		pthread_mutex_unlock(&r->racers->lock);
		return -rc;
	}
	return 0;
}

int smb_dial_race(struct ev_loop *loop, struct smb_dial_racers *racers,
                  const struct smb_dial_spec *spec, struct smb_conn **out,
                  enum smb_transport_kind *kind)
{
	if (spec->addrlen > sizeof(struct sockaddr_storage))
		return -EINVAL;
	struct race *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	r->tcp_peer = strdup(spec->tcp_peer);
	r->quic_peer = strdup(spec->quic_peer);
	if (r->cancel_fd < 0 || !r->tcp_peer || !r->quic_peer) {
		if (r->cancel_fd >= 0)
			close(r->cancel_fd);
		free(r->tcp_peer);
		free(r->quic_peer);
		free(r);
		return -ENOMEM;
	}
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cv, NULL);
	r->refs = 1;
	r->loop = loop;
	r->racers = racers;
	r->spec = *spec;
	/* The strings of quic live in the client, which outlives the racers. */
	r->quic = *spec->quic;
	r->quic.cancel_fd = r->cancel_fd;
	memcpy(&r->tcp_addr, spec->tcp_addr, spec->addrlen);
	memcpy(&r->quic_addr, spec->quic_addr, spec->addrlen);

	start_contestant(r, false);
	start_contestant(r, true);

	pthread_mutex_lock(&r->lock);
	while (!r->winner && r->finished < 2)
		pthread_cond_wait(&r->cv, &r->lock);
	r->decided = true;
	struct smb_conn *w = r->winner;
	enum smb_transport_kind wk = r->winner_kind;
	int err = r->err_quic ? r->err_quic : r->err_tcp;
	pthread_mutex_unlock(&r->lock);
	if (w) {
		uint64_t one = 1;
		/* A QUIC handshake still running gives up now. */
		if (write(r->cancel_fd, &one, sizeof(one)) < 0)
			smb_debug("dial race: cannot cancel the other contestant: %s",
			          strerror(errno));
		smb_info("%s: connected over %s first (transport=auto)",
		         wk == SMB_TRANSPORT_QUIC ? r->quic_peer : r->tcp_peer,
		         wk == SMB_TRANSPORT_QUIC ? "QUIC" : "TCP");
		*out = w;
		*kind = wk;
		err = 0;
	} else if (r->err_quic && r->err_tcp) {
		smb_info("dial race: TCP failed (%s), QUIC failed (%s)", strerror(-r->err_tcp),
		         strerror(-r->err_quic));
	}
	pthread_mutex_lock(&r->lock);
	race_put_locked(r);
	return err;
}
