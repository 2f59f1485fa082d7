/*-------------------------------------------------------------------------
 *
 * tls.c
 *	  The OpenSSL server context of the SSL and SASL_SSL listeners: the
 *	  server's certificate and key (PEM), TLS 1.2 at least, and client
 *	  certificates (ssl.client.auth: none, requested or required) verified
 *	  against a CA file, on SSL listeners only (as Kafka, KIP-684: SASL
 *	  authenticates a SASL_SSL listener's clients); the principal of a
 *	  verified client certificate (its subject as Kafka writes it, x500.c,
 *	  mapped by sslmap.c).  The record layer is OpenSSL's, driven by
 *	  libevent's OpenSSL bufferevents (server.c).
 *
 * Reload (SIGHUP): a new context is built from the files; if that fails
 * the old one stays and the error is logged.  Each connection's SSL holds
 * a reference to the context it was made from, so connections made
 * before a reload keep theirs and are not dropped.
 *
 * Loop thread only: no locking.
 *
 *-------------------------------------------------------------------------
 */
#include "tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>

#include "sslmap.h"
#include "util.h"
#include "x500.h"

static SSL_CTX *ctx;
static SslMap *map;

static const char *
tls_error_string(unsigned long e, char *buf, size_t len)
{
	if (e == 0)
		snprintf(buf, len, "no details");
	else
		ERR_error_string_n(e, buf, len);
	return buf;
}

/* log and drop what OpenSSL queued, under what we were doing */
static void
log_ssl_errors(const char *what, const char *file)
{
	unsigned long e = ERR_get_error();
	char		buf[256];

	mq_log_error("%s \"%s\": %s", what, file, tls_error_string(e, buf, sizeof(buf)));
	ERR_clear_error();
}

/* the key's passphrase from --ssl-key-password-file (never a command line) */
static int
key_password(char *buf, int size, int rwflag, void *userdata)
{
	const char *file = userdata;
	FILE	   *f = fopen(file, "r");
	size_t		n;

	if (f == NULL)
	{
		mq_log_error("cannot read the key password file \"%s\": %m", file);
		return -1;
	}
	n = fgets(buf, size, f) ? strcspn(buf, "\r\n") : 0;
	buf[n] = '\0';
	fclose(f);
	return (int) n;
}

static bool
load_files(SSL_CTX *c, const KTlsConfig *t)
{
	if (t->key_password_file)
	{
		SSL_CTX_set_default_passwd_cb(c, key_password);
		SSL_CTX_set_default_passwd_cb_userdata(c, (void *) t->key_password_file);
	}
	if (SSL_CTX_use_certificate_chain_file(c, t->cert_file) != 1)
		return log_ssl_errors("cannot load the certificate", t->cert_file), false;
	if (SSL_CTX_use_PrivateKey_file(c, t->key_file, SSL_FILETYPE_PEM) != 1)
		return log_ssl_errors("cannot load the private key", t->key_file), false;
	if (SSL_CTX_check_private_key(c) != 1)
		return log_ssl_errors("the private key does not match the certificate", t->cert_file), false;
	if (t->ca_file)
	{
		STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(t->ca_file);

		if (SSL_CTX_load_verify_locations(c, t->ca_file, NULL) != 1 || names == NULL)
			return log_ssl_errors("cannot load the CA file", t->ca_file), false;
		SSL_CTX_set_client_CA_list(c, names);
	}
	return true;
}

/* a context from the files, or NULL (logged) */
static SSL_CTX *
ctx_build(const KTlsConfig *t)
{
	SSL_CTX    *c = SSL_CTX_new(TLS_server_method());
	int			verify = SSL_VERIFY_NONE;

	if (c == NULL)
		return log_ssl_errors("cannot create a tls context for", t->cert_file), NULL;
	SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION);
	SSL_CTX_set_options(c, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_set_mode(c, SSL_MODE_RELEASE_BUFFERS);
	if (!load_files(c, t))
	{
		SSL_CTX_free(c);
		return NULL;
	}
	if (t->client_auth != KCLIENT_AUTH_NONE)
		verify = SSL_VERIFY_PEER | SSL_VERIFY_CLIENT_ONCE |
			(t->client_auth == KCLIENT_AUTH_REQUIRED ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0);
	SSL_CTX_set_verify(c, verify, NULL);
	/* resumed sessions would carry a client certificate past a reload */
	SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_num_tickets(c, 0);
	return c;
}

static bool
build(void)
{
	char		err[256];
	SslMap	   *m = sslmap_parse(kconfig.tls.mapping_rules, err, sizeof(err));
	SSL_CTX    *c;

	if (m == NULL)
	{
		mq_log_error("ssl principal mapping rules: %s", err);
		return false;
	}
	c = ctx_build(&kconfig.tls);
	if (c == NULL)
	{
		sslmap_free(m);
		return false;
	}
	SSL_CTX_free(ctx);			/* connections made from it keep a reference */
	sslmap_free(map);
	ctx = c;
	map = m;
	return true;
}

void
tls_start(void)
{
	if (kconfig.tls.cert_file == NULL || kconfig.tls.key_file == NULL)
		mq_fatal(MQ_EXIT_USAGE, "an SSL or SASL_SSL listener needs --ssl-certificate and --ssl-key");
	if (kconfig.tls.client_auth != KCLIENT_AUTH_NONE && kconfig.tls.ca_file == NULL)
		mq_fatal(MQ_EXIT_USAGE, "--ssl-client-auth needs --ssl-ca");
	if (!build())
		mq_fatal(MQ_EXIT_USAGE, "tls cannot be set up");
}

bool
tls_reload(void)
{
	if (ctx == NULL)
		return true;
	if (!build())
	{
		mq_log_error("tls reload failed: new connections keep the previous certificate and key");
		return false;
	}
	mq_log_info("tls reloaded: new connections use certificate \"%s\"", kconfig.tls.cert_file);
	return true;
}

SSL *
tls_new_ssl(bool sasl)
{
	SSL		   *ssl = SSL_new(ctx);

	if (ssl && sasl)
		SSL_set_verify(ssl, SSL_VERIFY_NONE, NULL);
	return ssl;
}

void
tls_log_failure(struct bufferevent *bev, const char *peer)
{
	unsigned long e = bufferevent_get_openssl_error(bev);
	char		buf[256];
	SSL		   *ssl = bufferevent_openssl_get_ssl(bev);
	long		verify = SSL_get_verify_result(ssl);

	/* a failed handshake is worth a line; a client gone after one is not */
	if (e != 0 && !SSL_is_init_finished(ssl))
		mq_log_warning("%s: tls: %s%s%s%s, closing", peer, tls_error_string(e, buf, sizeof(buf)),
					   verify != X509_V_OK ? " (client certificate: " : "",
					   verify != X509_V_OK ? X509_verify_cert_error_string(verify) : "",
					   verify != X509_V_OK ? ")" : "");
	while (bufferevent_get_openssl_error(bev) != 0)
		;
}

void
tls_close_notify(struct bufferevent *bev)
{
	SSL		   *ssl = bufferevent_openssl_get_ssl(bev);

	SSL_set_shutdown(ssl, SSL_RECEIVED_SHUTDOWN);
	(void) SSL_shutdown(ssl);
	ERR_clear_error();
}

char *
tls_peer_principal(struct bufferevent *bev, bool *refuse, char *dn, size_t dnlen)
{
	SSL		   *ssl = bufferevent_openssl_get_ssl(bev);
	X509	   *cert = SSL_get0_peer_certificate(ssl);
	char	   *name;

	*refuse = false;
	dn[0] = '\0';
	if (cert == NULL || SSL_get_verify_result(ssl) != X509_V_OK)
		return NULL;
	x500_name(X509_get_subject_name(cert), dn, dnlen);
	name = sslmap_apply(map, dn);
	*refuse = name == NULL || name[0] == '\0';
	if (*refuse)
	{
		free(name);
		name = NULL;
	}
	return name;
}
