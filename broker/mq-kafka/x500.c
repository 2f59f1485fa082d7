/*-------------------------------------------------------------------------
 *
 * x500.c
 *	  A certificate subject as Kafka's brokers write it for
 *	  ssl.principal.mapping.rules: Java's X500Principal.getName(), the RFC
 *	  2253 form, so that rules written against a Kafka broker match here.
 *
 * RDNs go last first, separated by ',', the attributes of a multi-valued
 * RDN by '+'.  CN, C, L, ST, O, OU, STREET, DC and UID are written by
 * name with their value as UTF-8 text, escaped as RFC 2253 says (a
 * backslash before , + " \ < > ; and before a leading '#' or space or a
 * trailing space); any other attribute (emailAddress, serialNumber,
 * title, ...) as its dotted OID and '#' with the hex of the value's DER
 * encoding, as Java does for keywords it does not know.  OpenSSL's own
 * RFC 2253 printer names those attributes and escapes every byte above
 * 0x7f, so a rule written for Kafka would not match it.
 *
 * No state: called on the loop thread per verified client certificate.
 *
 *-------------------------------------------------------------------------
 */
#include "x500.h"

#include <stdio.h>
#include <string.h>

#include <openssl/asn1.h>
#include <openssl/objects.h>

/* the attributes Java names in RFC 2253 form, and its names for them */
static const struct
{
	int			nid;
	const char *name;
}			known[] = {
	{NID_commonName, "CN"},
	{NID_countryName, "C"},
	{NID_localityName, "L"},
	{NID_stateOrProvinceName, "ST"},
	{NID_organizationName, "O"},
	{NID_organizationalUnitName, "OU"},
	{NID_streetAddress, "STREET"},
	{NID_domainComponent, "DC"},
	{NID_userId, "UID"},
};

typedef struct Out
{
	char	   *p;
	size_t		len;
	size_t		cap;			/* room for len < cap, and the NUL */
} Out;

static void
put(Out *o, const char *s, size_t n)
{
	for (size_t i = 0; i < n && o->len + 1 < o->cap; i++)
		o->p[o->len++] = s[i];
	o->p[o->len] = '\0';
}

static const char *
known_name(int nid)
{
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (known[i].nid == nid)
			return known[i].name;
	return NULL;
}

/* a known attribute's value: UTF-8, RFC 2253's escapes */
static void
put_text(Out *o, const ASN1_STRING *value)
{
	unsigned char *utf8 = NULL;
	int			n = ASN1_STRING_to_UTF8(&utf8, value);

	for (int i = 0; i < n; i++)
	{
		char		c = (char) utf8[i];

		if (strchr(",+\"\\<>;", c) != NULL || (i == 0 && (c == '#' || c == ' ')) ||
			(i == n - 1 && c == ' '))
			put(o, "\\", 1);
		put(o, &c, 1);
	}
	OPENSSL_free(utf8);
}

/* another attribute's value: '#' and the hex of its DER encoding */
static void
put_der(Out *o, const ASN1_STRING *value)
{
	ASN1_TYPE  *t = ASN1_TYPE_new();
	unsigned char *der = NULL;
	int			n = -1;

	if (t && ASN1_TYPE_set1(t, ASN1_STRING_type(value), value))
		n = i2d_ASN1_TYPE(t, &der);
	put(o, "#", 1);
	for (int i = 0; i < n; i++)
	{
		char		hex[3];

		snprintf(hex, sizeof(hex), "%02x", der[i]);
		put(o, hex, 2);
	}
	OPENSSL_free(der);
	ASN1_TYPE_free(t);
}

void
x500_name(const X509_NAME *name, char *out, size_t outlen)
{
	Out			o = {out, 0, outlen};
	int			last_set = -1;

	if (outlen == 0)
		return;
	out[0] = '\0';
	for (int i = X509_NAME_entry_count(name) - 1; i >= 0; i--)
	{
		const X509_NAME_ENTRY *e = X509_NAME_get_entry(name, i);
		const ASN1_OBJECT *obj = X509_NAME_ENTRY_get_object(e);
		const char *key = known_name(OBJ_obj2nid(obj));
		int			set = X509_NAME_ENTRY_set(e);

		if (o.len > 0)
			put(&o, set == last_set ? "+" : ",", 1);
		last_set = set;
		if (key)
			put(&o, key, strlen(key));
		else
		{
			char		oid[128];
			int			n = OBJ_obj2txt(oid, sizeof(oid), obj, 1);

			put(&o, oid, n > 0 ? (size_t) n : 0);
		}
		put(&o, "=", 1);
		if (key)
			put_text(&o, X509_NAME_ENTRY_get_data(e));
		else
			put_der(&o, X509_NAME_ENTRY_get_data(e));
	}
}
