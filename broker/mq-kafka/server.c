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
 *-------------------------------------------------------------------------
 */
#include "mqkafka.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/bufferevent.h>
#include <event2/listener.h>

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
	bev = bufferevent_socket_new(kbase, fd, BEV_OPT_CLOSE_ON_FREE);
	conn_start(bev, host, api_dispatch);
}

void
server_start(void)
{
	struct evutil_addrinfo hints,
			   *ai;
	struct evconnlistener *l;
	char		port[16];

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = EVUTIL_AI_PASSIVE;
	snprintf(port, sizeof(port), "%d", kconfig.listen_port);
	if (evutil_getaddrinfo(kconfig.listen_host, port, &hints, &ai) != 0)
		mq_fatal(MQ_EXIT_USAGE, "cannot resolve listen address \"%s\"", kconfig.listen_host);
	l = evconnlistener_new_bind(kbase, on_accept, NULL,
								LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 128,
								ai->ai_addr, (int) ai->ai_addrlen);
	evutil_freeaddrinfo(ai);
	if (l == NULL)
		mq_fatal(MQ_EXIT_LOCAL, "cannot listen on %s:%d: %m", kconfig.listen_host,
				 kconfig.listen_port);
}
