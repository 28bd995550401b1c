/* common/log.c — stderr or syslog, one line per call. */
#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static bool log_to_syslog;
static int log_max_level = LOG_NOTICE;

void smb_log_init(const char *ident, bool use_syslog, int max_level)
{
	log_to_syslog = use_syslog;
	log_max_level = max_level;
	if (use_syslog)
		openlog(ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void smb_log_set_level(int max_level)
{
	__atomic_store_n(&log_max_level, max_level, __ATOMIC_RELAXED);
}

int smb_log_level(void)
{
	return __atomic_load_n(&log_max_level, __ATOMIC_RELAXED);
}

static const char *level_str(int level)
{
	switch (level) {
	case LOG_ERR:
		return "error";
	case LOG_WARNING:
		return "warning";
	case LOG_NOTICE:
		return "notice";
	case LOG_INFO:
		return "info";
	default:
		return "debug";
	}
}

void smb_log(int level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	if (level > smb_log_level())
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (log_to_syslog) {
		syslog(level, "%s", line);
		return;
	}
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	fprintf(stderr, "%02d:%02d:%02d.%03ld smbrdma %s: %s\n", tm.tm_hour, tm.tm_min, tm.tm_sec,
	        ts.tv_nsec / 1000000, level_str(level), line);
}
