#!/usr/bin/env bash
# lua-resty-kafka (Debian's lua-nginx-kafka 0.07, a pure-Lua producer for
# nginx's embedded Lua) against mq-kafka at its defaults: Metadata v0 and
# Produce v0 with message format v0 (its default api_version), then
# Produce v1 and v2 (format v1), acks=all, its asynchronous
# producer, and sends to a topic that does not exist: its Metadata v0
# creates it (automatic creation, on by default as in Kafka), and with
# --auto-create-topics=0 the send fails.  nginx runs in the
# foreground on a free port with test/kafka/lua/send.lua as a handler.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
T="$(tmpdir)"

sql "SELECT mq.create_topic('lua_t', 2)" >/dev/null
kafka_start || { fail "mq-kafka starts"; finish; }

HTTP="$(_free_port)"
mkdir -p "$T/nginx"
cat >"$T/nginx/nginx.conf" <<CONF
load_module /usr/lib/nginx/modules/ndk_http_module.so;
load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;
daemon off; master_process off; worker_processes 1;
pid $T/nginx/nginx.pid; error_log $T/nginx/error.log info;
events { worker_connections 64; }
http {
	access_log off;
	client_body_temp_path $T/nginx; proxy_temp_path $T/nginx; fastcgi_temp_path $T/nginx;
	uwsgi_temp_path $T/nginx; scgi_temp_path $T/nginx;
	server {
		listen 127.0.0.1:$HTTP;
		location /send { content_by_lua_file $PWD/test/kafka/lua/send.lua; }
	}
}
CONF
/usr/sbin/nginx -p "$T/nginx" -c "$T/nginx/nginx.conf" &
NGINX=$!
on_exit "kill $NGINX 2>/dev/null"
wait_for 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$HTTP" 2>/dev/null || fail "nginx starts" "$(cat "$T/nginx/error.log")"

send() { curl -sS --max-time 30 "http://127.0.0.1:$HTTP/send?port=$KAFKA_PORT&$1"; }
# records: KEY=VALUE@OFFSET of a tag's records, in the order of their keys
records() {
	sql "SELECT string_agg(convert_from(key, 'UTF8') || '=' || convert_from(value, 'UTF8') || '@' || msg_offset, ' '
	            ORDER BY convert_from(key, 'UTF8'))
	       FROM (SELECT * FROM mq.fetch('lua_t', 0, 0) UNION ALL SELECT * FROM mq.fetch('lua_t', 1, 0)) r
	      WHERE convert_from(key, 'UTF8') LIKE '$1%'"
}
async_sent() { [[ -n "$(records "$1-async")" ]]; }
# what each synchronous send answered, as records() prints it: the offset
# after the record is the record's offset + 1
answered() {
	awk -v tag="$1" '$1 == "send" { sub(/^[^-]*-/, "", $2); v = $2; sub(/k/, "v", v);
		printf "%s%s-%s=%s-%s@%d", sep, tag, $2, tag, v, $3 - 1; sep = " " }' <<<"$2"
}

for v in default 1 2; do
	q="topic=lua_t"
	[[ $v == default ]] || q="$q&v=$v"
	run send "$q"
	check_eq "$(grep -c '^send .* nil$' <<<"$OUT") $(grep '^meta' <<<"$OUT")" "3 meta 2" \
		"api_version $v: Metadata gives two partitions and three synchronous sends succeed"
	check_eq "$(records "$v-k")" "$(answered "$v" "$OUT")" \
		"api_version $v: the records are in the log at the offsets the sends answered"
	check_eq "$(grep '^async' <<<"$OUT")" "async true nil" "api_version $v: the asynchronous send is taken"
	wait_for 10 async_sent "$v" || true
	check_eq "$(records "$v-async" | sed 's/@[0-9]*$//')" "$v-async=$v-a" \
		"api_version $v: the asynchronous producer's timer sends its record"
done

run send "topic=lua_t&acks=-1&v=2"
check_eq "$(grep -c '^send .* nil$' <<<"$OUT") $(records 2-k | wc -w)" "3 6" \
	"acks=all: three more synchronous sends succeed and are in the log"

run send "topic=lua_new"
check_eq "$(grep -c '^send default-k[0-9] [0-9]* nil$' <<<"$OUT")" "3" \
	"sends to a topic nobody made succeed: Metadata v0 created it, as Kafka's default broker does"
check_eq "$(sql "SELECT partitions || ':' || (SELECT count(*) FROM mq.fetch('lua_new', 0, 0, 10)
                                              WHERE convert_from(key, 'UTF8') LIKE 'default-k%')
                   FROM mq.topics WHERE topic = 'lua_new'")" "1:3" \
	"with one partition, holding the three records (the asynchronous one may come later)"

kafka_kill
kafka_start --auto-create-topics=0 || fail "mq-kafka restarts without automatic topic creation"
run send "topic=lua_missing"
check_match "$OUT" "send default-k1 nil .*not found topic|send default-k1 nil .*UNKNOWN" \
	"without automatic creation, a send to a topic that does not exist fails with the client's error"
check_eq "$(sql "SELECT count(*) FROM mq.topics WHERE topic = 'lua_missing'")" "0" "and creates no topic"

if ((FAILED > 0)); then
	tail -n 20 "$T/nginx/error.log" | sed 's/^/# nginx: /'
fi
finish
