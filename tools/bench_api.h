/* tools/bench_api.h — `orun bench --api` (tools/bench_api.c): the streaming /api/chat path against the
 * engine alone, in one process and one run. `orun bench` hands its argv over when --api is present.
 */
#ifndef ORUN_TOOLS_BENCH_API_H
#define ORUN_TOOLS_BENCH_API_H

/* argv as `orun bench` received it (argv[0] = "bench"; "--api" may appear anywhere and is skipped). Prints
 * the report on stdout; returns the exit status (0, 1 failure, 2 usage). */
int bench_api(int argc, char **argv);

#endif
