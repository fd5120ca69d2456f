/* tools/bench_serve.h — `orun bench --serve` (tools/bench_serve.c): a load generator over the HTTP API of a
 * running Ollama-compatible server. `orun bench` hands its argv over when --serve is present.
 */
#ifndef ORUN_TOOLS_BENCH_SERVE_H
#define ORUN_TOOLS_BENCH_SERVE_H

/* argv as `orun bench` received it (argv[0] = "bench"; "--serve" may appear anywhere and is skipped). Prints
 * the report on stdout; returns the exit status (0, 1 failure or any failed request, 2 usage). */
int bench_serve(int argc, char **argv);

#endif
