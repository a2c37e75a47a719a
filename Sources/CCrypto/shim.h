#ifndef CCRYPTO_SHIM_H
#define CCRYPTO_SHIM_H
// OpenSSL's libcrypto (Debian: libssl-dev): only the EVP digest API is used
// (https://www.openssl.org/docs/man3.0/man3/EVP_DigestInit.html). Nothing here needs a wrapper.
#include <openssl/evp.h>
#endif
