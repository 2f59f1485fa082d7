# shellcheck shell=bash
# Burrow's configuration for the tests that run it against mq-kafka
# (test/kafka/burrow.sh on one node, test/t/138_kafka_cluster_burrow.pl on
# the three-node cluster), sourced by both:
#
#   burrow_conf DIR ZK_PORT HTTP_PORT BROKER...
#
# writes DIR/burrow.toml: Burrow's pid file in DIR, its ZooKeeper on
# 127.0.0.1:ZK_PORT, its HTTP API on 127.0.0.1:HTTP_PORT, one Kafka
# cluster "mq" of the BROKERs (host:port) read by a consumer "mq", topics
# and offsets refreshed every 2 s and 1 s, lag kept in memory and
# evaluated afresh at every request (so a test sees a commit at once).
burrow_conf() {
	local dir="$1" zk="$2" http="$3" servers
	shift 3
	servers="$(printf '"%s",' "$@")"
	servers="${servers%,}"
	cat >"$dir/burrow.toml" <<CONF
[general]
pidfile="$dir/burrow.pid"
[logging]
level="info"
[zookeeper]
servers=["127.0.0.1:$zk"]
[client-profile.mq]
client-id="burrow"
[cluster.mq]
class-name="kafka"
servers=[$servers]
client-profile="mq"
topic-refresh=2
offset-refresh=1
[consumer.mq]
class-name="kafka"
cluster="mq"
servers=[$servers]
client-profile="mq"
[httpserver.default]
address="127.0.0.1:$http"
[storage.default]
class-name="inmemory"
workers=2
intervals=10
min-distance=1
[evaluator.default]
class-name="caching"
expire-cache=1
CONF
}
