# runner/chatfmt/ — llama-server's chat formats: the format a GGUF's Jinja template selects, and the
# incremental parsers that split the model's output into content, reasoning and tool calls (README.md).
if WITH_SERVER
librunner_a_SOURCES += runner/chatfmt/chatfmt.h runner/chatfmt/internal.h runner/chatfmt/formats.c \
	runner/chatfmt/stream.c runner/chatfmt/calls.c runner/chatfmt/harmony.c
endif
EXTRA_DIST += runner/chatfmt/README.md
