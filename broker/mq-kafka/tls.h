/*-------------------------------------------------------------------------
 *
 * tls.h
 *	  TLS for the SSL and SASL_SSL listeners (tls.c): the server's
 *	  OpenSSL context, its reload, and a client certificate's principal.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_TLS_H
#define MQK_TLS_H

#include <event2/bufferevent.h>
#include <openssl/ssl.h>

#include "mqkafka.h"

/* read kconfig.tls; exits with a message if it cannot be used */
extern void tls_start(void);
/* read the certificate, key, CA and rules again; keep the old on error */
extern bool tls_reload(void);
/* a server-side SSL for one new connection; a SASL_SSL listener's asks
 * for no client certificate (SASL authenticates it) */
extern SSL *tls_new_ssl(bool sasl);
/* log why bev's TLS failed, if its handshake did */
extern void tls_log_failure(struct bufferevent *bev, const char *peer);
/* send close_notify on bev's TLS, without waiting for the peer's */
extern void tls_close_notify(struct bufferevent *bev);

/*
 * The user name of bev's verified client certificate, mapped by the
 * rules (malloc'd); NULL with *refuse false when the client sent none,
 * NULL with *refuse true when no rule applies.  dn gets the subject.
 */
extern char *tls_peer_principal(struct bufferevent *bev, bool *refuse, char *dn, size_t dnlen);

#endif							/* MQK_TLS_H */
