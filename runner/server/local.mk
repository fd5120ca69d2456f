# runner/server/ — the HTTP transport (libmicrohttpd), `orun serve`'s routes and logging, the scheduler that
# loads models and queues requests, Ollama's environment configuration, /metrics. Only with the server build.
if WITH_SERVER
librunner_a_SOURCES += runner/server/http.c runner/server/http.h runner/server/server.c runner/server/server.h \
	runner/server/sched.c runner/server/sched.h runner/server/envconfig.c runner/server/envconfig.h \
	runner/server/metrics.c runner/server/metrics.h
librunner_a_SOURCES += runner/server/stream.c runner/server/stream.h runner/server/log.c runner/server/log.h
endif
