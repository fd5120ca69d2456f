# registry/ — libregistry.a: pull and push against an OCI distribution registry over libcurl (issue 18).
# Only with the server/client part of the build (libcurl); programs link $(REGISTRY_LIB).
if WITH_SERVER
noinst_LIBRARIES += libregistry.a
libregistry_a_SOURCES = registry/registry.h registry/internal.h registry/http.c registry/pull.c registry/push.c
libregistry_a_CPPFLAGS = $(AM_CPPFLAGS) $(CURL_CFLAGS) $(CRYPTO_CFLAGS)
REGISTRY_LIB = libregistry.a
else
EXTRA_DIST += registry/registry.h registry/internal.h registry/http.c registry/pull.c registry/push.c
endif
EXTRA_DIST += registry/README.md
