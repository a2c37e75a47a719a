#ifndef CCRYPTO_SHIM_H
#define CCRYPTO_SHIM_H
// OpenSSL's libcrypto (Debian: libssl-dev): the EVP digest API (SHA-256, BLAKE2b-512;
// https://www.openssl.org/docs/man3.0/man3/EVP_DigestInit.html), Ed25519 through EVP_PKEY raw keys and
// EVP_DigestSign / EVP_DigestVerify (https://www.openssl.org/docs/man3.0/man7/Ed25519.html), and RAND_bytes
// for new keys. Nothing here needs a wrapper.
#include <openssl/evp.h>
#include <openssl/rand.h>
#endif
