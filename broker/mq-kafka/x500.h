/*-------------------------------------------------------------------------
 *
 * x500.h
 *	  A certificate subject as Kafka writes it (Java's RFC 2253 form):
 *	  x500.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQK_X500_H
#define MQK_X500_H

#include <stddef.h>

#include <openssl/x509.h>

/* name into out (at most outlen bytes with the NUL, cut if longer) */
extern void x500_name(const X509_NAME *name, char *out, size_t outlen);

#endif							/* MQK_X500_H */
