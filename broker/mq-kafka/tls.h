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

#include <openssl/ssl.h>

#include "mqkafka.h"

/* read kconfig.tls; exits with a message if it cannot be used */
extern void tls_start(void);
/* read the certificate, key, CA and rules again; keep the old on error */
extern bool tls_reload(void);
/* a server-side SSL for one new connection */
extern SSL *tls_new_ssl(void);

/*
 * The user name of ssl's verified client certificate, mapped by the
 * rules (malloc'd); NULL with *refuse false when the client sent none,
 * NULL with *refuse true when no rule applies.  dn gets the subject.
 */
extern char *tls_peer_principal(SSL *ssl, bool *refuse, char *dn, size_t dnlen);
/* the first OpenSSL error queued, in words (for the log) */
extern const char *tls_error_string(unsigned long e, char *buf, size_t len);

#endif							/* MQK_TLS_H */
