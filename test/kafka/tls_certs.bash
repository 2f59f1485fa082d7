# shellcheck shell=bash
# A throwaway PKI for the TLS tests (sourced by test/kafka/tls.sh,
# test/bench/kafka_tls.sh and the docs test), made with Debian's openssl:
#
#   tls_make_certs DIR
#
# writes, in DIR (P-256 keys, unencrypted, mode 600):
#   ca.crt ca.key             the test CA
#   server.crt server.key     CN=localhost, SAN DNS:localhost, IP:127.0.0.1
#   server2.crt server2.key   the same names, another key (a reload's new one)
#   client.crt client.key     CN=app1,OU=clients,O=mq test
#   other.crt other.key       CN=app2,OU=ops,O=mq test
#   expired.crt expired.key   CN=app1 too, valid in 2020 only
#   rogue.crt rogue.key       CN=app1, signed by another CA (rogue-ca.crt)
#   rogue-ca.crt rogue-ca.key

_tls_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

# _tls_sign DIR NAME SUBJECT CA [EXT]: NAME.key, NAME.crt signed by CA
_tls_sign() {
	local d="$1" name="$2" subj="$3" ca="$4" ext="${5:-}"
	_tls_key "$d/$name.key"
	openssl req -new -key "$d/$name.key" -subj "$subj" -out "$d/$name.csr" 2>/dev/null
	printf '%s\n' "basicConstraints=CA:FALSE" ${ext:+"$ext"} >"$d/$name.ext"
	openssl x509 -req -in "$d/$name.csr" -CA "$d/$ca.crt" -CAkey "$d/$ca.key" \
		-CAcreateserial -days 2 -sha256 -extfile "$d/$name.ext" -out "$d/$name.crt" 2>/dev/null
}

# an expired certificate: openssl ca takes explicit start and end dates
_tls_expired() {
	local d="$1"
	mkdir -p "$d/ca-db"
	: >"$d/ca-db/index.txt"
	cat >"$d/ca-db/ca.cnf" <<EOF
[ca]
default_ca = test
[test]
database = $d/ca-db/index.txt
new_certs_dir = $d/ca-db
serial = $d/ca-db/serial
default_md = sha256
policy = any
unique_subject = no
[any]
commonName = supplied
organizationalUnitName = optional
organizationName = optional
EOF
	echo 1000 >"$d/ca-db/serial"
	_tls_key "$d/expired.key"
	openssl req -new -key "$d/expired.key" -subj "/O=mq test/OU=clients/CN=app1" -out "$d/expired.csr" 2>/dev/null
	openssl ca -batch -config "$d/ca-db/ca.cnf" -cert "$d/ca.crt" -keyfile "$d/ca.key" \
		-startdate 20200101000000Z -enddate 20200102000000Z -in "$d/expired.csr" \
		-out "$d/expired.crt" -notext 2>/dev/null
}

tls_make_certs() {
	local d="$1"
	mkdir -p "$d"
	_tls_key "$d/ca.key"
	openssl req -x509 -new -key "$d/ca.key" -subj "/O=mq test/CN=mq test CA" -days 2 -sha256 \
		-out "$d/ca.crt" 2>/dev/null
	_tls_key "$d/rogue-ca.key"
	openssl req -x509 -new -key "$d/rogue-ca.key" -subj "/O=rogue/CN=rogue CA" -days 2 -sha256 \
		-out "$d/rogue-ca.crt" 2>/dev/null
	_tls_sign "$d" server "/O=mq test/CN=localhost" ca "subjectAltName=DNS:localhost,IP:127.0.0.1"
	_tls_sign "$d" server2 "/O=mq test/CN=localhost" ca "subjectAltName=DNS:localhost,IP:127.0.0.1"
	_tls_sign "$d" client "/O=mq test/OU=clients/CN=app1" ca "extendedKeyUsage=clientAuth"
	_tls_sign "$d" other "/O=mq test/OU=ops/CN=app2" ca "extendedKeyUsage=clientAuth"
	# an attribute Java's RFC 2253 form does not name (Kafka: its OID and DER)
	_tls_sign "$d" mailed "/O=mq test/OU=clients/CN=app1/emailAddress=a@b.c" ca "extendedKeyUsage=clientAuth"
	_tls_sign "$d" rogue "/O=mq test/OU=clients/CN=app1" rogue-ca "extendedKeyUsage=clientAuth"
	_tls_expired "$d"
	chmod 600 "$d"/*.key
	[[ -s "$d/server.crt" && -s "$d/client.crt" && -s "$d/expired.crt" && -s "$d/rogue.crt" ]]
}
