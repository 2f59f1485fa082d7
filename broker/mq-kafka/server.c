/*-------------------------------------------------------------------------
 *
 * server.c
 *	  The listening socket: accepts clients and starts a connection
 *	  (kconn.c) for each, handing it api_dispatch as the taker of its
 *	  requests.  It stands above kconn.c and api.c, at the top of the
 *	  request path with main.c.  Loop thread only.
 *
 * While no database connection can be made, clients are refused at
 * accept: this broker is down, and they should try another.
 *
 * One evconnlistener per --listeners entry (listener.c), each handing
 * its listener to the connections it accepts; on an SSL or SASL_SSL
 * listener a connection's bufferevent is libevent's OpenSSL one, with an
 * SSL from tls.c's context.
 *
 *-------------------------------------------------------------------------
 */
#include "mqkafka.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/listener.h>

#include "listener.h"
#include "tls.h"
#include "util.h"

static void
on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
		  int salen, void *arg)
{
	struct bufferevent *bev;
	int			one = 1;
	char		host[INET6_ADDRSTRLEN] = "?";

	if (!pool_available())
	{
		evutil_closesocket(fd); /* no database: this broker is down */
		return;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *) sa)->sin_addr, host, sizeof(host));
	else if (sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *) sa)->sin6_addr, host, sizeof(host));
	if (listener_is_tls(arg))
	{
		bev = bufferevent_openssl_socket_new(kbase, fd, tls_new_ssl(listener_is_sasl(arg)), BUFFEREVENT_SSL_ACCEPTING,
											 BEV_OPT_CLOSE_ON_FREE);
		/* a client that closes without close_notify has just gone */
		bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	}
	else
		bev = bufferevent_socket_new(kbase, fd, BEV_OPT_CLOSE_ON_FREE);
	conn_start(bev, host, arg, api_dispatch);
}

static void
listen_on(const KListener *ls)
{
	struct evutil_addrinfo hints,
			   *ai;
	struct evconnlistener *l;
	char		port[16];
	const char *host = ls->host[0] ? ls->host : NULL;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = EVUTIL_AI_PASSIVE;
	snprintf(port, sizeof(port), "%d", ls->port);
	if (evutil_getaddrinfo(host, port, &hints, &ai) != 0)
		mq_fatal(MQ_EXIT_USAGE, "cannot resolve listen address \"%s\"", ls->host);
	l = evconnlistener_new_bind(kbase, on_accept, (void *) ls,
								LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 128,
								ai->ai_addr, (int) ai->ai_addrlen);
	evutil_freeaddrinfo(ai);
	if (l == NULL)
		mq_fatal(MQ_EXIT_LOCAL, "cannot listen on %s:%d: %m", ls->host, ls->port);
	mq_log_info("listener %s (%s) on %s:%d, advertised as %s:%d", ls->name,
				listener_proto_name(ls->proto), ls->host, ls->port, ls->adv_host, ls->adv_port);
}

void
server_start(void)
{
	bool		tls = false;

	for (int i = 0; i < kconfig.nlisteners; i++)
		tls |= listener_is_tls(&kconfig.listeners[i]);
	if (tls)
		tls_start();
	for (int i = 0; i < kconfig.nlisteners; i++)
		listen_on(&kconfig.listeners[i]);
}

void
server_reload_tls(void)
{
	(void) tls_reload();
}
