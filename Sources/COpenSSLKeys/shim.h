#ifndef COPENSSLKEYS_SHIM_H
#define COPENSSLKEYS_SHIM_H
// OpenSSL 3's libcrypto (Debian: libssl-dev) for `catalog serve`'s bearer tokens (docs/serve.md §2): PEM keys
// (PEM_read_bio_PUBKEY, PEM_read_bio_PrivateKey), EVP_DigestSign / EVP_DigestVerify for Ed25519, ECDSA P-256
// and RSA, and ECDSA_SIG to turn JWS's raw r||s into DER and back
// (https://www.openssl.org/docs/man3.0/man3/EVP_DigestVerify.html, ECDSA_SIG_new(3)). No wrappers.
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#endif
