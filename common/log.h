/* common/log.h — one logger for the whole daemon.
 *
 * Messages go to stderr (foreground) or syslog (daemonized); the target is
 * chosen once at start-up with smb_log_init() and never changes afterwards.
 * Thread-safe: every call formats into a stack buffer and emits one line.
 * Never log a password or key material.
 */
#ifndef SMBRDMA_COMMON_LOG_H
#define SMBRDMA_COMMON_LOG_H

#include <stdbool.h>
#include <syslog.h>

/* Levels are syslog's: LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO, LOG_DEBUG. */
void smb_log_init(const char *ident, bool use_syslog, int max_level);
void smb_log_set_level(int max_level);
int smb_log_level(void);
void smb_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define smb_err(...)   smb_log(LOG_ERR, __VA_ARGS__)
#define smb_warn(...)  smb_log(LOG_WARNING, __VA_ARGS__)
#define smb_info(...)  smb_log(LOG_INFO, __VA_ARGS__)
#define smb_debug(...) smb_log(LOG_DEBUG, __VA_ARGS__)

#endif
